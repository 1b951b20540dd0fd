"""Command members at the run's start (issue 53): each program must start, log `started` in time (library mode) or
still run once the group is first stable (output-topic mode), and be known to the coordinator by its member name.
A program that cannot is the input's fault: the run stops with one line naming the member's field and its log, in
run.json's errors, exit 2. The runner (harness/run.py) calls these in its join phase."""
from __future__ import annotations

from harness.bad_input import ScenarioError
from harness.plan import Plan
from kafkanet.client_ids import member_of, same_client
from workloads.command import DEFAULT_START_TIMEOUT_S, words
from workloads.kinds import member_kind
from workloads.services import WorkloadProcess, wait_started


def command_processes(plan: Plan, pool) -> list[tuple]:
    """(planned member, its process) of each command member that started with the run."""
    found = [(m, pool.processes.get(m.name)) for m in plan.members]
    return [(m, p) for m, p in found if isinstance(p, WorkloadProcess) and p.argv is not None]


def refuse_command(plan: Plan, member, why: str, outcome) -> None:
    """A program that cannot start is the input's fault: exit 2, the line in run.json's errors; the other members
    are stopped, their logs kept, nothing analysed."""
    shown = " ".join(words(member.settings.command))
    outcome.errors.append(f"{plan.member_field(member.name)}.command: {shown}: {member.name} {why}; "
                          f"see logs/{member.name}.log")
    raise ScenarioError(outcome.errors[-1])


def command_members_started(plan: Plan, pool, outcome) -> None:
    """Each command member in library mode logged `started` in time (output-topic mode logs nothing: its members
    must still run once the group is first stable, command_members_ran)."""
    if plan.scenario.consumer_group.output is not None:
        return
    for member, process in command_processes(plan, pool):
        why = wait_started(process, member.settings.start_timeout_s or DEFAULT_START_TIMEOUT_S)
        if why is not None:
            refuse_command(plan, member, why, outcome)


def command_members_alive(plan: Plan, pool) -> bool:
    return all(p.alive() for _, p in command_processes(plan, pool))


def command_members_ran(plan: Plan, pool, outcome) -> None:
    """No command member exited before the group was first stable (or the join's limit passed)."""
    for member, process in command_processes(plan, pool):
        if not process.alive():
            refuse_command(plan, member, f"exited with {process.exit_code} before the group was first stable",
                           outcome)


def unlisted_commands(plan: Plan, pool, described: dict | None) -> dict[str, str] | None:
    """Output-topic mode: the command members running that the coordinator's last description did not list, with
    their commands (None in library mode: the analysis tells them from the members' own events)."""
    if plan.scenario.consumer_group.output is None or described is None:
        return None
    listed = described.get("client_ids", ())
    return {m.name: " ".join(words(m.settings.command)) for m, p in command_processes(plan, pool)
            if p.alive() and not any(same_client(m.name, c) for c in listed)}


def command_members_named(plan: Plan, described: dict | None, outcome) -> None:
    """Each member of a group with command members is known by its client.id, its member name: the rpc rules and
    cuts, and group-states.jsonl, find a member by it (kafkanet/client_ids.py), and would silently miss a program
    that set its own."""
    commands = [m for m in plan.members if member_kind(m.settings.client).command]
    if not commands or not described:
        return
    names = [m.name for m in plan.members]
    unknown = sorted(c for c in set(described.get("client_ids", ())) if member_of(c, names) is None)
    if unknown:
        outcome.errors.append(f"{plan.member_field(commands[0].name)}.command: client.id {unknown[0]} names no member: "
                              "set it to {member} (workloads/app.py's consumer does; a Streams program's clients "
                              "may add `-` and a suffix)")
        raise ScenarioError(outcome.errors[-1])
