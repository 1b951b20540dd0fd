"""Workload processes as services the harness starts, stops, kills and freezes (cf. kafkatest services).

Each workload is its own OS process; its stdout and stderr go to logs/<name>.log in the run directory.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafkanet.waiting import wait_until
from workloads import command, config as workload_config
from workloads.app import subscription
from workloads.control import host_ack_path, host_control_path, write_atomically
from workloads.history import JsonlLog, now_ms
from workloads.owner import owner_gone, this_owner
from workloads.config import AdminProbeConfig, HostConfig, MemberConfig, ProducerConfig
from workloads.kinds import KINDS, member_kind

OWNER_ENV = "KAFKA_CHAOS_OWNER"  # the owner id of the harness that started the workload (workloads/owner.py)
ROOT = Path(__file__).resolve().parents[1]  # workloads/ runs from here under any interpreter


@dataclass
class WorkloadProcess:
    name: str
    module: str
    config: MemberConfig | ProducerConfig | AdminProbeConfig | HostConfig
    run_dir: Path
    python: str = sys.executable  # a member pinned to another confluent-kafka runs in that release's venv
    role: str | None = None  # what its events file says it is (member, admin_probe); None: it logs no events
    process: subprocess.Popen | None = field(default=None, repr=False)
    lane: str | None = None  # the client lane it was started on, when not its own name's (a duplicate's)
    sent: set[int] = field(default_factory=set, repr=False)  # the signals the harness sent the current process
    watcher: threading.Thread | None = field(default=None, repr=False)  # logs its death by a signal not sent
    argv: list[str] | None = None  # a command member's program (None: python -m <module>)
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # added to the harness's own environment

    def start(self) -> "WorkloadProcess":
        log_path = self.run_dir / "logs" / f"{self.name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.sent = set()
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.argv or [self.python, "-m", self.module], cwd=self.cwd,
                env={**os.environ, **self.env, **workload_config.encode(self.config), OWNER_ENV: this_owner(),
                     "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group; a Ctrl-C in the terminal is the harness's to handle
            )
        if self.role is not None:
            self.watcher = threading.Thread(target=watch_death, args=(self, self.process, self.sent),
                                            name=f"watch-{self.name}", daemon=True)
            self.watcher.start()
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30) -> int | None:
        """Graceful: SIGTERM, then SIGKILL if it has not exited in time. Never leaves it frozen. Returns once a
        death by a signal the harness did not send is in its events file."""
        if self.alive():
            self.request_stop()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.watcher is not None:
            self.watcher.join(10)
        return self.exit_code

    def _signal(self, sig: int) -> None:
        """To the whole process group (a member may be a launcher and its JVM)."""
        if self.alive():
            self.sent.add(sig)
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                # the group is gone and the watcher has reaped it, but poll() cannot say so yet: while the watcher
                # thread holds Popen's waitpid lock, poll() answers None ("not known") instead of the exit code
                pass

    def request_stop(self) -> None:
        self.resume()
        self._signal(signal.SIGTERM)

    def kill(self) -> int | None:
        self._signal(signal.SIGKILL)
        return self.process.wait(10) if self.process else None

    def freeze(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    @property
    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()


def watch_death(workload: WorkloadProcess, process: subprocess.Popen, sent: set[int]) -> None:
    """Waits for one process of a workload; if a signal the harness did not send ended it, logs that death (a
    host's: each of its members'); so does a command member's exit on its own, whatever its code (a program of the
    user's writes no event of its own end)."""
    code = process.wait()
    if (isinstance(workload.config, MemberConfig) and workload.config.output_topic is not None
            and member_kind(workload.config.client).command):
        # a program in output-topic mode writes no events/: a crash of the harness's alone would make the checks read
        # them (a transactional or Streams member of ours writes its own, and its death belongs there)
        return
    if code < 0 and -code not in sent:
        if isinstance(workload.config, HostConfig):
            for member in workload.config.members:
                log_death(workload.run_dir, member.member, "member", code)
        else:
            log_death(workload.run_dir, workload.name, workload.role, code)
    elif code >= 0 and not sent and workload.argv is not None:
        log_death(workload.run_dir, workload.name, workload.role, code)


def log_death(run_dir: Path, name: str, role: str, exit_code: int) -> None:
    """The `crashed` event a process killed by a signal cannot write itself (e.g. SIGABRT from a failed assertion
    in librdkafka), or a command member's exit on its own: in its own events file, at the time the harness saw it
    die."""
    if exit_code < 0:
        name_of = signal_name(-exit_code)
        detail = f"{name_of}: ended by a signal the harness did not send (logged by the harness)"
        row = {"ts_ms": now_ms(), "member": name, "kind": "crashed", "signal": name_of, "exit_code": exit_code,
               "detail": detail}
    else:
        row = {"ts_ms": now_ms(), "member": name, "kind": "crashed", "exit_code": exit_code,
               "detail": f"exited on its own with code {exit_code} (logged by the harness)"}
    if role != "member":
        row["role"] = role
    events = JsonlLog(run_dir / "events" / f"{name}.jsonl")
    events.append(row)
    events.close()


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal has no name
        return f"signal {number}"


def producer_process(config: ProducerConfig) -> WorkloadProcess:
    return WorkloadProcess(config.producer_id, "workloads.producer", config, Path(config.run_dir))


def admin_probe_process(config: AdminProbeConfig) -> WorkloadProcess:
    return WorkloadProcess(config.probe_id, "workloads.admin_probe", config, Path(config.run_dir),
                           python=config.release.python or sys.executable, role="admin_probe")


def member_process(config: MemberConfig) -> WorkloadProcess:
    if member_kind(config.client).command:
        return command_process(config)
    if member_kind(config.client).member_as_host:  # the program takes a host's config, whatever the number of members
        return host_process(HostConfig(host=config.member, run_dir=config.run_dir, members=[config]))
    return WorkloadProcess(config.member, member_kind(config.client).module, config, Path(config.run_dir),
                           python=config.release.python or sys.executable, role="member")


def command_process(config: MemberConfig) -> WorkloadProcess:
    """A command member: the user's program with the run's values filled in (workloads/command.py), in its folder."""
    filled = command.values(bootstrap_servers=config.bootstrap_servers, group_id=config.group_id,
                            topics=subscription(config), member=config.member, instance_id=config.instance_id,
                            output_topic=config.output_topic)
    return WorkloadProcess(config.member, None, config, Path(config.run_dir), role="member",
                           argv=command.argv(config.command, filled), cwd=config.workdir,
                           env=command.environment(filled))


def wait_started(process: WorkloadProcess, timeout_s: float) -> str | None:
    """Waits for a member's `started` event; None once it is there, else why not (exited first, or not in time)."""
    events = process.run_dir / "events" / f"{process.name}.jsonl"
    logged = lambda: events.exists() and b'"kind":"started"' in events.read_bytes()  # noqa: E731
    if wait_until(lambda: logged() or not process.alive(), timeout_s, interval_s=0.1) and logged():
        return None
    if not process.alive():
        return f"exited with {process.exit_code} before it logged `started`"
    return f"logged no `started` within {timeout_s:g} s (start_timeout_s)"


def host_process(config: HostConfig) -> WorkloadProcess:
    """A member host: one process, many members (workloads/member_host.py, the Java member program)."""
    first = config.members[0]
    return WorkloadProcess(config.host, member_kind(first.client).host_module, config, Path(config.run_dir),
                           python=first.release.python or sys.executable, role="member")


def stacks_signal(module: str) -> int | None:
    """The signal that makes a host of `module` write every thread's stack into its log (None: it has none)."""
    return next((k.stacks_signal for k in KINDS.values() if k.host_module == module), None)


CRASH_TIMEOUT_S = 180


@dataclass
class HostControl:
    """Asks one member host to bring members down or up (the protocol of workloads.config.HostConfig) and waits
    for its answer."""
    process: WorkloadProcess
    down: dict[str, str] = field(default_factory=dict)  # member -> "crashed" or "stopped"

    @property
    def name(self) -> str:
        return self.process.name

    def ask(self, member: str, how: str | None, timeout_s: float = 30) -> None:
        """`how`: crashed, stopped, or None (running again); returns once the host says so."""
        if how is None:
            self.down.pop(member, None)
        else:
            self.down[member] = how
        run_dir = self.process.run_dir
        write_atomically(host_control_path(run_dir, self.name),
                         {kind: sorted(m for m, h in self.down.items() if h == kind) for kind in ("crashed", "stopped")})
        key = how or "running"
        answered = wait_until(lambda: member in self.state().get(key, ()) or not self.process.alive(), timeout_s,
                              interval_s=0.05)
        if not answered:
            stacks = self.dump_stacks()
            raise TimeoutError(f"{self.name} did not bring {member} {'up' if how is None else how} within {timeout_s:g} s"
                               + (f"; its threads' stacks are in logs/{self.name}.log" if stacks else ""))

    def dump_stacks(self) -> bool:
        """Asks the host to write every thread's stack into its log (where a member it could not bring down waits)."""
        sig = stacks_signal(self.process.module)
        if sig is None or not self.process.alive():
            return False
        try:
            os.kill(self.process.pid, sig)
        except OSError:
            return False
        return True

    def state(self) -> dict:
        try:
            return json.loads(host_ack_path(self.process.run_dir, self.name).read_text())
        except (OSError, ValueError):
            return {}


@dataclass
class HostedMember:
    """One member inside a member host, as the faults see a member (faults.backend.MemberHandle): a crash or a
    graceful stop of it alone is asked of its host; a freeze freezes the host, every member in it."""
    config: MemberConfig
    host: HostControl
    guard: Callable[[str], object] | None = None  # keeps its leaves from the brokers (the request-aware proxy's cut)
    unguard: Callable[[str], list[dict]] | None = None  # lifts it: what the member sent meanwhile
    down_at_ms: int | None = None  # when its consumer was destroyed, as its host said, the last time it was crashed
    sent_while_down: list[dict] = field(default_factory=list)  # what it sent from the guard to its restart

    @property
    def name(self) -> str:
        return self.config.member

    @property
    def run_dir(self) -> Path:
        return Path(self.config.run_dir)

    @property
    def lane(self) -> str:
        return self.host.name

    @property
    def host_members(self) -> list[str]:
        config = self.host.process.config
        return [m.member for m in config.members] if isinstance(config, HostConfig) else [self.name]

    @property
    def leave_guard(self) -> bool:
        return self.guard is not None

    def start(self) -> "HostedMember":
        if self.unguard is not None:
            self.sent_while_down = self.unguard(self.name)
        self.host.ask(self.name, None)
        return self

    def stop(self, timeout_s: float = 30) -> int | None:
        self.host.ask(self.name, "stopped", timeout_s)
        return 0

    def kill(self) -> int | None:
        if self.guard is not None:
            self.guard(self.name)
        # the host destroys the consumer before it answers; on a saturated machine (500 members on 2 cores) that
        # took over 30 s: its answer says when the consumer was destroyed (an older host's, when it answered)
        self.host.ask(self.name, "crashed", timeout_s=CRASH_TIMEOUT_S)
        self.down_at_ms = (self.host.state().get("down_at_ms") or {}).get(self.name) or now_ms()
        return None

    def freeze(self) -> None:
        self.host.process.freeze()

    def resume(self) -> None:
        self.host.process.resume()

    def alive(self) -> bool:
        return self.host.process.alive() and self.name in self.host.state().get("running", ())


def after_stop(process: WorkloadProcess) -> None:
    """What the member's kind does once the process has stopped (nothing for a process that is no member)."""
    if process.role != "member" or isinstance(process.config, HostConfig):
        return
    kind = member_kind(process.config.client)
    if kind.after_stop is not None:
        kind.after_stop(process.run_dir, process.name, process.config.instance_id)


def stop_all(processes: list[WorkloadProcess], timeout_s: float = 30) -> None:
    """Ask every process to stop at once (a group that leaves together rebalances once), then wait."""
    for process in processes:
        process.request_stop()
    for process in processes:
        process.stop(timeout_s)


def sweep_stale_workloads() -> int:
    """Thaw workloads whose harness is gone (killed with SIGKILL while they were frozen).

    A running orphan stops by itself once it sees its harness gone (workloads/config.py); a frozen
    one (SIGSTOP, a member fault) sees nothing until it is resumed. Each thawed one then stops
    itself, forced 15 s later if closing hangs. Returns how many were thawed.
    """
    thawed = 0
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            owner = _env_value(environ.read_bytes(), OWNER_ENV)
            state = (environ.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if owner is None or state not in ("T", "t"):
            continue
        if not owner_gone(owner):
            continue
        try:
            os.kill(int(environ.parent.name), signal.SIGCONT)
            thawed += 1
        except ProcessLookupError:
            pass
    return thawed


def _env_value(environ: bytes, name: str) -> str | None:
    prefix = name.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode(errors="replace")
    return None


