"""One chaos run, in Jepsen's phases: cluster up → workload + nemesis → final heal → drain → analyse.

Every heal, the member shutdown and the cluster teardown run in `finally`, so they happen on a
normal end, on an exception and on SIGINT/SIGTERM (the CLI turns both into exceptions).
"""
from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from faults.base import REQUIREMENTS, Fault
from faults.context import FaultContext
from faults.nemesis import Nemesis, Step
from faults.timeline import FaultTimeline
from harness.cluster.kafka import ClusterError, KafkaCluster
from harness.cpu_pressure import Stopwatch
from harness.group import GroupWatcher
from harness import coordinator_log
from harness.group_sampler import GroupSampler, TransactionSampler
from harness.plan import PLAN_FILE, MemberSettings, Plan, compile_plan, instance_id
from harness.progress import one_line, progress, say
from harness.releases.kafka_release import KafkaVersionError
from harness.releases.versions import kafka_version
from harness.rundir import clients_logged, create_run_dir, new_run_id, write_json
from analysis.api import WORKLOAD_PHASE
from harness.bad_input import ScenarioError
from harness.input_file import read_yaml
from harness.scenario import CHANGELOG_CONFIGS, FaultEntry, Scenario
from harness.settling import GroupLog, finding_line, lag_by_partition, stable_limit_s
from kafkanet import waiting
from harness.hosting import hosted_settings, start_times
from harness.command_members import (command_members_alive, command_members_named, command_members_ran,
                                     command_members_started, unlisted_commands)
from harness.cluster.features import apply_features
from harness.output_topic import read_back
from kafkanet.features import TRANSACTION_VERSION
from harness.verified import VerifiedReaders
from harness.state import key_space, prefill, read_final, state_config
from harness.streams import group_configs, group_members, set_group_configs, streams_settings
from workloads.config import AdminProbeConfig, ClientRelease, HostConfig, MemberConfig, ProcessingConfig, ProducerConfig, TransactionSettings
from workloads.control import control_path, write_atomically
from workloads.kinds import member_kind
from workloads.security import security_config
from workloads.command import DEFAULT_START_TIMEOUT_S
from workloads.services import (HostControl, HostedMember, WorkloadProcess, admin_probe_process, after_stop,
                                host_process, member_process, producer_process, stop_all)
from workloads.transactions import member_transactional_id, partition_transactional_id

PROGRESS_EVERY_S = 5
READ_BACK_S = 120              # the read-back's wait for an output topic's open transactions (a minute's time-out)
READ_BACK_AFTER_READERS_S = 10  # ... once a transactional run's verified readers have waited for them
SCHEDULE_FILE = "schedule.json"
REPOSITORY = Path(__file__).resolve().parents[1]


def scenario_source(path) -> str:
    """A scenario file as run.json's `source` names it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(REPOSITORY)) if path.is_relative_to(REPOSITORY) else str(path)


@dataclass
class RunOutcome:
    run_dir: Path
    phases: dict[str, float] = field(default_factory=dict)
    cpu_pressure: dict[str, float | None] = field(default_factory=dict)  # per phase: harness/cpu_pressure.py
    drained: bool = False
    errors: list[str] = field(default_factory=list)     # the harness itself failed (exit 3)
    unsettled: list[str] = field(default_factory=list)  # findings: the group did not settle (harness.settling, exit 1)
    skipped_faults: list[dict] = field(default_factory=list)
    summary: dict | None = None
    source: str | None = None   # the scenario file (scenario_source) or the pytest test id that built it

    def to_json(self) -> dict:
        return {"run_dir": str(self.run_dir), "source": self.source, "phases_s": self.phases,
                "cpu_pressure_pct": self.cpu_pressure, "drained": self.drained,
                "errors": self.errors, "unsettled": self.unsettled, "skipped_faults": self.skipped_faults}


@contextmanager
def timed_phase(outcome: RunOutcome, name: str):
    """Shows the phase as progress and records in run.json its duration and how starved for CPU the machine was."""
    watch = Stopwatch()
    try:
        with progress(name):
            yield
    finally:
        outcome.phases[name] = round(time.monotonic() - watch.started_s, 2)
        outcome.cpu_pressure[name] = watch.pct()


def member_config(plan: Plan, settings: MemberSettings, release: ClientRelease, *, member: str, run_dir: Path,
                  bootstrap: str, instance_id: str | None, host: str | None = None) -> MemberConfig:
    """One member's process config: `settings` its own (the plan's), `release` its client's; a hosted member's
    names its host and the client settings hosting changes. A librdkafka member not assigned within the group's
    stable limit writes its client's group debug log (workloads/client_debug.py)."""
    watched = plan.scenario.run.join_watch and member_kind(settings.client).join_watch
    return MemberConfig(
        host=host, hosted_settings=hosted_settings(settings.client) if host else {},
        join_watch_s=stable_limit_s(plan.scenario.run.stable_timeout_s, len(plan.members)) if watched else None,
        member=member, run_dir=str(run_dir), client=settings.client, release=release, bootstrap_servers=bootstrap,
        group_id=plan.group_id, topics=[t.name for t in plan.topics], pattern=settings.pattern,
        metadata_refresh_ms=settings.metadata_refresh_ms, protocol=settings.protocol, assignor=settings.assignor,
        remote_assignor=settings.remote_assignor, session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_interval_ms, max_poll_interval_ms=settings.max_poll_interval_ms,
        commit=settings.commit, auto_commit_interval_ms=settings.auto_commit_interval_ms,
        processing=ProcessingConfig(**settings.processing.model_dump()), batch_size=settings.batch_size,
        extra=dict(settings.config), instance_id=instance_id,
        subscribed_topics=None if settings.topics is None else list(settings.topics),
        command=settings.command, workdir=settings.workdir,
        start_timeout_s=settings.start_timeout_s or DEFAULT_START_TIMEOUT_S,
        output_topic=output.topic if (output := plan.scenario.consumer_group.output) else None,
        state=state_config(plan.scenario), streams=streams_settings(plan.scenario.consumer_group, settings.client),
        transaction=transaction_settings(plan.scenario.consumer_group, settings.commit))


def transaction_settings(group, commit: str) -> TransactionSettings | None:
    """commit: transaction's settings (the group's `transaction` block, its defaults filled in by the schema)."""
    return TransactionSettings(**group.transaction.model_dump(exclude={"readers"})) if commit == "transaction" else None


def producer_config(plan: Plan, run_dir: Path, bootstrap: str) -> ProducerConfig:
    p = plan.producer.settings
    return ProducerConfig(producer_id=plan.producer.name, run_dir=str(run_dir), bootstrap_servers=bootstrap,
                          topics=[t.name for t in plan.topics], records=p.records, rate=p.rate, acks=p.acks,
                          idempotence=p.idempotence, extra=dict(p.config), keys=key_space(plan.scenario))


def admin_probe(plan: Plan, run_dir: Path, cluster) -> WorkloadProcess | None:
    """The group's admin probe (consumer_group.admin_probe), on its own lane with the group's client release;
    None when the plan has none."""
    probe = plan.admin_probe
    if probe is None:
        return None
    return admin_probe_process(AdminProbeConfig(
        probe_id=probe.name, run_dir=str(run_dir), bootstrap_servers=cluster.lane_bootstrap_servers(probe.lane),
        group_id=plan.group_id, call=probe.settings.call, every_ms=probe.settings.every_ms,
        request_timeout_ms=probe.settings.request_timeout_ms, release=plan.release(probe.client, probe.version)))


class RunTopics:
    """The run's topics: the scenario's, and those a topic_create trigger adds. The watcher reads the list;
    the producer learns of an added topic from its control file and writes to it from then on."""

    def __init__(self, names: list[str], producer_control: Path) -> None:
        self.names, self.producer_control = names, producer_control

    def add(self, name: str) -> None:
        self.names.append(name)
        write_atomically(self.producer_control, {"topics": self.names})


class MemberPool:
    """The group's member processes by name: the ones the scenario declares, and those triggers start
    later (member_join on a spare lane, a restarted bounce, a duplicate group.instance.id)."""

    def __init__(self, plan: Plan, run_dir: Path, cluster: KafkaCluster, rpc_proxy=None) -> None:
        self.plan, self.run_dir, self.cluster, self.rpc_proxy = plan, run_dir, cluster, rpc_proxy
        self.planned = {m.name: m.settings for m in (*plan.members, *plan.spares)}
        self.joined_like: dict[str, MemberSettings] = {}
        self.processes: dict[str, WorkloadProcess | HostedMember] = {}  # every member by name, hosted or not
        self.hosts: dict[str, WorkloadProcess] = {}

    def start_host(self, host: str) -> list[HostedMember]:
        """A member host (consumer_group.members_per_host) with its planned members, on its own lane."""
        bootstrap = self.cluster.lane_bootstrap_servers(host)
        members = [member_config(self.plan, m.settings, self.plan.release(m.settings.client, m.settings.version),
                                 member=m.name, run_dir=self.run_dir, bootstrap=bootstrap, instance_id=m.instance_id,
                                 host=host) for m in self.plan.hosts[host]]
        started_before = sum(len(self.plan.hosts[h]) for h in self.hosts)  # its first member starts after theirs
        spacing_ms = self.plan.scenario.consumer_group.effective().start_spacing_ms
        process = host_process(HostConfig(host=host, run_dir=str(self.run_dir), members=members,
                                          **start_times(started_before, spacing_ms))).start()
        self.hosts[host] = process
        control = HostControl(process)
        proxy = self.rpc_proxy
        guard = partial(proxy.cut, leaves_only=True) if proxy is not None else None
        hosted = [HostedMember(config, control, guard=guard, unguard=proxy and proxy.uncut) for config in members]
        self.processes.update((m.name, m) for m in hosted)
        return hosted

    def settings(self, index: int) -> MemberSettings:
        """member-<index>'s settings: the plan's (a spare lane's are the group's own) unless it joined `like`
        an entry of a mixed group."""
        name = f"member-{index}"
        if name not in self.planned:
            raise ValueError(f"{name}: the plan has no lane left for it (cluster.spare_lanes)")
        return self.joined_like.get(name) or self.planned[name]

    def start(self, name: str, lane: str | None = None, instance: int | None = None,
              like: int | None = None) -> WorkloadProcess:
        """Start member `name` on its own lane (or `lane`); static members get instance-<instance>; a
        duplicate (`instance` given) runs with that member's settings; `like`: those of consumer_group.members[like]."""
        index = instance if instance is not None else int(name.rsplit("-", 1)[1])
        if like is not None:
            self.joined_like[name] = self.plan.entries[like]
        settings = self.settings(index)
        config = member_config(self.plan, settings, self.plan.release(settings.client, settings.version), member=name,
                               run_dir=self.run_dir, bootstrap=self.cluster.lane_bootstrap_servers(lane or name),
                               instance_id=instance_id(index, settings))
        process = member_process(config).start()
        process.lane = lane or name  # what a client fault on this member (random-member) resolves to
        self.processes[name] = process
        return process

    def next_names(self, count: int) -> list[str]:
        """The next unused member names; each needs a spare lane on the cluster."""
        taken = {int(n.rsplit("-", 1)[1]) for n in self.processes if n.count("-") == 1}
        first = max(taken, default=0) + 1
        return [f"member-{i}" for i in range(first, first + count)]

    def all(self) -> list[WorkloadProcess | HostedMember]:
        """Every member, hosted or not."""
        return list(self.processes.values())

    def os_processes(self) -> list[WorkloadProcess]:
        """The processes to stop at the end: the member hosts, and each member that runs in a process of its own."""
        return list(self.hosts.values()) + [p for p in self.processes.values() if isinstance(p, WorkloadProcess)]


def nemesis_for(plan: Plan, cluster: KafkaCluster, pool: MemberPool, timeline: FaultTimeline,
                topics: RunTopics, schedule: list[FaultEntry], rpc_proxy=None) -> Nemesis:
    ctx = FaultContext(cluster, pool.processes, timeline, random.Random(plan.scenario.run.seed),
                       plan.group_id, plan.topics[0].name, pool=pool, topics=topics, rpc_proxy=rpc_proxy)

    def build(entry) -> Fault:
        """Called when the step fires, so a role (coordinator, leader, ...) resolves to the broker holding it then."""
        return entry.fault_class.build(ctx, entry.target, entry.params,
                                       duration_s=entry.duration_s, requested_target=entry.target)

    steps = [Step(f.at_s, f.duration_s, partial(build, f), f"{f.kind}@{f.at_s:g}s on {f.target}") for f in schedule]
    return Nemesis(steps, log=say)


def workload_time_limit(plan: Plan) -> float:
    """run.workload_timeout_s, else generous: the producer's planned time, the last fault's end, plus its delivery
    time-out."""
    if plan.scenario.run.workload_timeout_s is not None:
        return plan.scenario.run.workload_timeout_s
    producer = plan.producer.settings
    planned = producer.records / producer.rate if producer.rate else 60
    last_fault = max((f.at_s + f.duration_s for f in plan.schedule), default=0)
    return max(planned, last_fault) + 300


def wait_until(condition, timeout_s: float, what: str, on_tick=None) -> bool:
    """kafkanet.waiting.wait_until, saying once why not yet (requests time out while a fault is active)."""
    return waiting.wait_until(condition, timeout_s, on_error=lambda exc: say(f"{what}: not yet ({exc})"),
                              on_tick=on_tick, tick_every_s=PROGRESS_EVERY_S)


def run_scenario(scenario: Scenario, runs_root: Path, cluster: KafkaCluster | None = None,
                 on_drain=None, source: str | None = None) -> RunOutcome:
    """Compile the scenario into its plan (the client releases resolved, before anything starts), then run it."""
    with progress("plan"):
        plan = compile_plan(scenario)
    return run_plan(plan, runs_root, cluster, on_drain, source)


def run_plan(plan: Plan, runs_root: Path, cluster: KafkaCluster | None = None,
             on_drain=None, source: str | None = None) -> RunOutcome:
    """Run one plan; starts (and removes) its own cluster unless one is given. ``on_drain()`` is called as the
    group starts to drain (the CLI starts its analysis service then: the faults are healed, nothing is timed).
    ``source`` (run.json) says what the scenario came from; the trend page keys its series by it."""
    run_id = new_run_id(plan.scenario.name)
    started = time.time()
    try:
        run_dir = create_run_dir(runs_root, run_id)
    except OSError as exc:  # a file where a folder should be, no permission
        raise ScenarioError(f"{runs_root}: cannot make a run directory there: {exc.strerror or exc}") from None
    (run_dir / "scenario.yaml").write_text(plan.scenario.to_yaml())
    write_json(run_dir / PLAN_FILE, plan.to_json())
    write_schedule(run_dir / SCHEDULE_FILE, plan)
    outcome = RunOutcome(run_dir, source=source)
    phase = partial(timed_phase, outcome)
    say(f"run {run_id}: {run_dir}")
    own_cluster = cluster is None
    with clients_logged(run_dir):
        try:
            if not own_cluster:
                refuse_a_cluster_unlike_the_plan(plan, cluster)
            schedule = planned_faults(plan, cluster or KafkaCluster, outcome)  # its own cluster: the class says what it gives
            if own_cluster:
                with phase("cluster"):
                    try:  # the brokers of another release are built first; one that cannot be is bad input
                        cluster = KafkaCluster(plan.scenario.cluster, run_id, client_lanes=plan.lanes).start()
                    except KafkaVersionError as exc:
                        raise ScenarioError(f"cluster.kafka_version: {exc}") from None
            missing = [lane for lane in plan.starting_lanes if lane not in cluster.client_lanes]
            if missing and "lanes" in cluster.capabilities:
                raise ScenarioError(f"consumer_group.members: this cluster has no lane for {', '.join(missing)} "
                                    f"(its lanes: {', '.join(cluster.client_lanes)})")
            with member_lanes_proxied(cluster, plan) as rpc_proxy:
                _run_on(cluster, plan, run_dir, outcome, phase, schedule, rpc_proxy, on_drain)
            with ThreadPoolExecutor(1) as pool:  # the cluster is done with: it goes while the logs are compacted
                leaving = pool.submit(_let_go, cluster, own_cluster, run_dir, phase, outcome, plan.group_id, started)
                if plan.scenario.run.log_format == "parquet":
                    with phase("compact logs"):
                        compact_logs(run_dir)
                cluster = None
                leaving.result()
        except ScenarioError:
            raise
        except Exception as exc:  # the harness failed: said in run.json too, and raised on (the CLI: exit 3)
            outcome.errors.append(one_line(exc))
            raise
        finally:
            if cluster is not None:  # a run that failed before its end
                _let_go(cluster, own_cluster, run_dir, phase, outcome, plan.group_id, started)
            write_json(run_dir / "run.json", outcome.to_json())
    return outcome


def refuse_a_cluster_unlike_the_plan(plan: Plan, cluster) -> None:
    """A cluster the run is given (the pytest fixture's, --cluster's, an external one) must be what the scenario's
    cluster section asks for, where that matters to the run: one ScenarioError naming the field, before anything
    starts."""
    section = plan.scenario.cluster
    if not cluster.owned:
        if section.kafka_version:
            raise ScenarioError("cluster.kafka_version: an external cluster runs the release its owner runs; leave it unset")
        if section.log_disk_mb is not None:
            raise ScenarioError("cluster.log_disk_mb: an external cluster's brokers keep their logs on their owner's "
                                "disks; leave it unset")
        if section.broker_config:
            raise ScenarioError("cluster.broker_config: an external cluster's brokers run their owner's settings; "
                                "leave it unset")
        return
    if kafka_version(section.kafka_version) != kafka_version(cluster.spec.kafka_version):
        raise ScenarioError(f"cluster.kafka_version: this cluster runs Kafka {kafka_version(cluster.spec.kafka_version)}, "
                            f"not {kafka_version(section.kafka_version)}; run the scenario on its own cluster")
    if section.log_disk_mb is not None and cluster.spec.log_disk_mb is None:
        raise ScenarioError("cluster.log_disk_mb: this cluster was started without it, so its brokers have no log disk "
                            "of their own (disk_full fills one); run the scenario on its own cluster")
    unlike = {key: value for key, value in section.broker_config.items() if cluster.spec.broker_config.get(key) != value}
    if unlike:
        key, value = next(iter(unlike.items()))
        raise ScenarioError(f"cluster.broker_config: this cluster's brokers were started without {key}={value}; run the "
                            f"scenario on its own cluster")


def _let_go(cluster, own_cluster: bool, run_dir: Path, phase, outcome: RunOutcome, group_id: str, started: float) -> None:
    """The containers' logs from the run's start into the run directory, and the coordinator's lines about the group
    (coordinator.log);
    the cluster removed if the run started it. Either failing (the Docker engine gone) is a harness error in
    run.json, and the other is still tried."""
    try:
        cluster.save_logs(run_dir / "logs", since=started)
        coordinator_log.write(run_dir, group_id)
    except Exception as exc:
        outcome.errors.append(f"the brokers' logs could not be saved: {one_line(exc)}")
    if own_cluster:
        with phase("teardown"):
            try:
                cluster.stop()
            except Exception as exc:
                outcome.errors.append(f"the cluster could not be removed: {one_line(exc)}; `kafka-chaos clean` "
                                      "removes what is left once the Docker engine answers")


def write_schedule(path: Path, plan: Plan) -> None:
    """The run's whole fault schedule, before it starts: `kafka-chaos run SCENARIO --schedule FILE` replays it."""
    write_json(path, {"seed": plan.scenario.run.seed,
                      "faults": [f.entry().model_dump(mode="json", exclude_defaults=False) for f in plan.schedule]})


def load_schedule(path: Path) -> list[dict]:
    """A schedule.json a run wrote, or a YAML/JSON list of fault entries."""
    data = read_yaml(path, "schedule")
    entries = data.get("faults") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ScenarioError(f"{path}: a schedule is a list of fault entries (or a run's {SCHEDULE_FILE})")
    return entries


def compact_logs(run_dir: Path) -> None:
    from analysis.api import compact
    for line in compact(run_dir).lines():
        say(line)


def planned_faults(plan: Plan, cluster, outcome: RunOutcome) -> list[FaultEntry]:
    """The plan's faults this cluster can take. On a cluster the harness did not start, a fault that
    needs what it lacks (faults.base.REQUIREMENTS) is skipped with its reason (printed, and in run.json);
    one that would touch the cluster itself is refused unless the user allowed destructive faults."""
    kept = []
    for i, entry in enumerate(f.entry() for f in plan.schedule):
        need = entry.fault_class.requirement(entry.target, entry.params)
        what = f"{entry.kind}@{entry.at_s:g}s on {entry.target}"
        if need not in cluster.capabilities:
            outcome.skipped_faults.append({"fault": what, "reason": f"needs {REQUIREMENTS[need]}, which this cluster does not give"})
            say(f"skipped {what}: needs {REQUIREMENTS[need]}, which this cluster does not give")
        elif need != "processes" and not cluster.owned and not cluster.allow_destructive:
            raise ScenarioError(f"faults[{i}] ({what}): this fault touches a cluster the harness did not start, and every "
                                "other client of it; allow it with --allow-destructive")
        else:
            kept.append(entry)
    return kept


@contextmanager
def member_lanes_proxied(cluster, plan: Plan):
    """Every member lane (spares included) through the request-aware proxy that rpc faults act in, when the
    plan says so (an rpc fault, or run.rpc_proxy); yields the proxy, or None."""
    if not plan.rpc_proxy:
        yield None
        return
    if "lanes" not in cluster.capabilities:
        if plan.scenario.run.rpc_proxy:
            raise ScenarioError("run.rpc_proxy: this cluster has no per-client lanes to route through the proxy")
        yield None  # its rpc faults were skipped (planned_faults says why)
        return
    lanes = [*plan.member_lanes, *(m.lane for m in plan.spares)]
    say(f"member lanes ({len(lanes)}) through the request-aware proxy")
    with cluster.proxied_lanes(lanes) as proxy:
        yield proxy


def _run_on(cluster: KafkaCluster, plan: Plan, run_dir: Path, outcome: RunOutcome, phase, schedule: list[FaultEntry],
            rpc_proxy=None, on_drain=None) -> None:
    features = apply_features(cluster, plan.scenario.cluster.transaction_version)
    write_json(run_dir / "cluster.json", {**cluster.describe(), "features": features,
                                          "transaction_version": features.get(TRANSACTION_VERSION),
                                          "member_lanes_through_rpc_proxy": rpc_proxy is not None, "clients": [
        {"client": c.client, "version": c.version or c.release.client_version,
         **({"librdkafka_version": c.release.librdkafka_version} if c.release.librdkafka_version else {})}
        for c in plan.clients]})
    timeline = FaultTimeline(run_dir / "faults.jsonl")
    topics = RunTopics([t.name for t in plan.topics], control_path(run_dir, plan.producer.name))
    pool = MemberPool(plan, run_dir, cluster, rpc_proxy)
    nemesis = Nemesis([])
    producer: WorkloadProcess | None = None
    probe = admin_probe(plan, run_dir, cluster)
    watcher: GroupWatcher | None = None
    sampler: GroupSampler | None = None
    txn_sampler: TransactionSampler | None = None
    readers: VerifiedReaders | None = None
    drained = False

    def show_progress():
        try:
            p = watcher.progress()
            active = ", ".join(repr(f) for f in nemesis.active()) or "none"
            alive = sum(m.alive() for m in pool.all())
            say(f"produced {p.produced}/{plan.producer.settings.records}, group lag {p.lag}, "
                f"members alive {alive}/{len(pool.all())}, active faults: {active}")
        except Exception as exc:
            say(f"progress unavailable ({exc})")

    group_log = GroupLog(run_dir)
    try:
        with phase("topics" if len(plan.topics) > 1 else "topic"):
            for topic in plan.topics:
                cluster.create_topic(topic.name, topic.partitions, topic.replication_factor)
            if (output := plan.scenario.consumer_group.output) is not None:
                cluster.create_topic(output.topic, output.partitions, output.replication_factor)
            if (changelog := plan.scenario.created_changelog) is not None:
                cluster.create_topic(changelog.name, changelog.partitions, changelog.replication_factor,
                                     CHANGELOG_CONFIGS)
            if configs := group_configs(plan.scenario.consumer_group):
                set_group_configs(cluster.admin(), plan.group_id, configs)
        if (transaction := plan.scenario.consumer_group.transaction) is not None and plan.scenario.transactional:
            readers = VerifiedReaders(run_dir, cluster.control_bootstrap_servers, plan.scenario.consumer_group.output,
                                      transaction.readers).start()
        if plan.scenario.created_changelog is not None and plan.scenario.state.prefill:
            with phase(f"prefill the state ({key_space(plan.scenario).keys} keys)"):
                prefill(cluster.control_bootstrap_servers, state_config(plan.scenario))
        watcher = GroupWatcher(cluster.control_bootstrap_servers, plan.group_id, topics.names,
                               sum(t.partitions for t in plan.topics), log=group_log, protocol=sampled_protocol(plan))
        if not security_config():  # the wire sampler speaks plaintext only: a SASL/SSL cluster's run has no band
            sampler = GroupSampler(run_dir, cluster.control_bootstrap_servers, plan.group_id, sampled_protocol(plan),
                                   plan.scenario.run.group_sample_ms).start()
            if plan.scenario.transactional:
                ids = transactional_ids(plan)
                output = plan.scenario.consumer_group.output
                written = [(output.topic, p) for p in range(output.partitions)] if output is not None else []
                txn_sampler = TransactionSampler(run_dir, cluster.control_bootstrap_servers, plan.group_id,
                                                 plan.scenario.run.group_sample_ms, ids, written).start()
        with phase(f"{len(plan.members)} members join {plan.group_id}"):
            for host in plan.hosts:
                pool.start_host(host)
            for member in plan.members:
                if member.host is None:
                    pool.start(member.name, lane=member.lane)
            command_members_started(plan, pool, outcome)
            limit_s = stable_limit_s(plan.scenario.run.stable_timeout_s, len(plan.members))
            alive = partial(command_members_alive, plan, pool)  # a command member that exits ends the wait
            stable = wait_until(lambda: watcher.is_stable(group_members(plan)) or not alive(), limit_s,
                                "group stable") and alive()
            command_members_ran(plan, pool, outcome)
            if not stable:
                if not watcher.ever_described:  # not a finding: the harness could not see the group
                    raise ClusterError(f"the group could not be described once in {limit_s:g} s "
                                       f"({watcher.describe_error or 'Kafka could not say'}); see {run_dir / 'logs'}")
                unsettled(outcome, group_log, watcher, "join", limit_s, len(plan.members),
                          unlisted_commands(plan, pool, watcher.last_described))
            command_members_named(plan, watcher.last_described, outcome)
        with phase(WORKLOAD_PHASE):
            nemesis = nemesis_for(plan, cluster, pool, timeline, topics, schedule, rpc_proxy)
            producer = producer_process(producer_config(plan, run_dir, cluster.lane_bootstrap_servers(plan.producer.lane))).start()
            if probe is not None:
                probe.start()
            nemesis.start()
            if not wait_until(lambda: not producer.alive() and nemesis.finished, workload_time_limit(plan),
                              "workload", show_progress):
                outcome.errors.append(f"the workload did not end within {workload_time_limit(plan):g} s")
            if producer.exit_code not in (0, None):  # None: still running, the workload's time-out above says so
                outcome.errors.append(f"producer exited with {producer.exit_code}; see logs/{plan.producer.name}.log")
        with phase("final heal"):
            nemesis.heal_all()
        if on_drain is not None:
            on_drain()
        with phase("drain"):
            drain_timeout_s = plan.scenario.run.drain_timeout_s
            watcher.last_progress = None  # what the drain itself read
            outcome.drained = wait_until(lambda: watcher.progress().lag == 0, drain_timeout_s, "drain", show_progress)
            if not outcome.drained and watcher.last_progress is None:
                outcome.errors.append(f"the group's offsets could not be read once in the drain's {drain_timeout_s:g} s")
            elif not outcome.drained:
                watcher.describe("drain")
                unsettled(outcome, group_log, watcher, "drain", drain_timeout_s, sum(m.alive() for m in pool.all()))
            drained = True
    finally:
        nemesis.heal_all()
        outcome.errors.extend(nemesis.errors)
        if watcher is not None:
            watcher.close()
        for running in (sampler, txn_sampler):
            if running is not None:
                running.stop()
        group_log.close()
        with phase("stop workload"):
            stop_all(([producer] if producer else []) + pool.os_processes() + ([probe] if probe else []))
        for process in pool.os_processes():
            after_stop(process)
        if readers is not None:
            with phase("verified readers read to the end"):
                stop_verified_readers(readers, plan, outcome, wait=drained)
    if plan.scenario.state is not None:
        with phase("read the final state"):
            read_final(cluster.control_bootstrap_servers, state_config(plan.scenario), run_dir)
    if (output := plan.scenario.consumer_group.output) is not None:
        with phase("read the output topic"):
            # a transactional run's verified readers have waited for its open transactions already
            read_back(run_dir, cluster.control_bootstrap_servers, output, plan.group_id,
                      {t.name: t.partitions for t in plan.topics}, stateful=plan.scenario.state is not None,
                      timeout_s=READ_BACK_AFTER_READERS_S if readers is not None else READ_BACK_S)


def transactional_ids(plan: Plan) -> list[str]:
    """The transactional ids the members' producers use (workloads/transactions.py): one a member, or one an input
    partition (transaction.transactional_id: partition)."""
    transaction = plan.scenario.consumer_group.transaction
    if transaction is not None and transaction.transactional_id == "partition":
        return [partition_transactional_id(plan.group_id, t.name, p) for t in plan.topics for p in range(t.partitions)]
    return [member_transactional_id(plan.group_id, m.name) for m in plan.members if m.settings.commit == "transaction"]


def stop_verified_readers(readers: VerifiedReaders, plan: Plan, outcome: RunOutcome, wait: bool) -> None:
    """Once the members stopped, the readers read on to every partition's end (a transaction a member died in
    ends by its transaction.timeout.ms at the latest), at most the drain's limit (none after a failed run); then stop."""
    limit_s = min(plan.scenario.consumer_group.transaction.timeout_ms / 1000 + 10, plan.scenario.run.drain_timeout_s)
    summary = readers.finish(limit_s if wait else 0, lambda: say(f"verified readers: {readers.progress()}"))
    for isolation, said in summary.items():
        if said["error"]:
            outcome.errors.append(f"the {isolation} verified reader failed: {said['error']}")
        elif wait and not said["reached_end"]:
            say(f"the {isolation} verified reader did not reach the output topic's end within {limit_s:g} s: a "
                "transaction was left open (see verified/readers.json)")


def sampled_protocol(plan: Plan) -> str:
    """How the group is described: a group with a KIP-848 member is a consumer group (classic members can join one),
    a group of streams-protocol members (KIP-1071) a streams group."""
    protocols = {m.settings.protocol for m in plan.members}
    return "consumer" if "consumer" in protocols else "streams" if "streams" in protocols else "classic"


def unsettled(outcome: RunOutcome, group_log: GroupLog, watcher: GroupWatcher, phase: str, limit_s: float,
              expected_members: int, unlisted: dict[str, str] | None = None) -> None:
    """The group did not settle within its limit: a finding (harness.settling), in group.jsonl and run.json."""
    progress = watcher.last_progress
    lag = lag_by_partition(progress.end_offsets, progress.committed) if progress is not None else None
    row = group_log.unsettled(phase, limit_s, expected_members, watcher.partitions, watcher.last_described, lag,
                              unlisted)
    outcome.unsettled.append(finding_line(row))
    say(f"finding: {outcome.unsettled[-1]}")
