"""A cluster the run is given (the pytest fixture's, --cluster's, an external one) is checked against the
scenario's cluster section before anything starts (harness/run.py refuse_a_cluster_unlike_the_plan); the real
cluster's case: tests/cluster/test_disk_full.py. And a container's log tail is cut by the engine."""
from dataclasses import dataclass, field

import pytest

from harness.cluster.containers import TAIL_LINES, container_logs, log_tail
from harness.plan import compile_plan
from harness.run import refuse_a_cluster_unlike_the_plan, run_plan
from harness.scenario import ClusterSpec, ScenarioError, parse_scenario

DISK_FULL = {"kind": "disk_full", "target": "coordinator", "at_s": 8, "duration_s": 10}


def plan_of(cluster: dict, faults: list[dict] = ()):
    return compile_plan(parse_scenario({"cluster": cluster, "faults": list(faults)}), offline=True)


@dataclass
class StandInCluster:
    """What run_plan reads of a given cluster before it starts anything; whatever would start something fails."""
    spec: ClusterSpec = field(default_factory=ClusterSpec)
    owned: bool = True
    allow_destructive: bool = False
    capabilities: tuple = ("processes", "toxiproxy", "lanes", "containers")
    client_lanes: tuple = ()
    logs_saved: int = 0

    def save_logs(self, logs_dir, since=None) -> None:
        self.logs_saved += 1

    def __getattr__(self, name):
        raise AssertionError(f"the run used the cluster ({name}) before refusing it")


def test_disk_full_on_a_given_cluster_without_log_disks_is_refused_before_anything_starts(tmp_path):
    plan = plan_of({"log_disk_mb": 64}, [DISK_FULL])
    cluster = StandInCluster(client_lanes=plan.lanes)
    with pytest.raises(ScenarioError, match=r"^cluster\.log_disk_mb: this cluster was started without it, so its "
                                            r"brokers have no log disk of their own"):
        run_plan(plan, tmp_path / "runs", cluster)
    assert cluster.logs_saved == 1  # the run's end: its logs kept, the cluster not the run's to stop


def test_an_external_cluster_is_refused_log_disks_naming_the_field():
    with pytest.raises(ScenarioError, match=r"^cluster\.log_disk_mb: an external cluster's brokers .*leave it unset"):
        refuse_a_cluster_unlike_the_plan(plan_of({"log_disk_mb": 64}), StandInCluster(owned=False))


def test_broker_settings_a_given_cluster_was_not_started_with_are_refused_naming_the_field():
    """Silently run with the cluster's own settings, a scenario would measure something else (a KIP-848 session of
    10 s where it asked for 50 s)."""
    asked = {"broker_config": {"group.consumer.session.timeout.ms": 50000}}
    with pytest.raises(ScenarioError, match=r"^cluster\.broker_config: this cluster's brokers were started without "
                                            r"group\.consumer\.session\.timeout\.ms=50000; run the scenario on its own"):
        refuse_a_cluster_unlike_the_plan(plan_of(asked), StandInCluster())
    with pytest.raises(ScenarioError, match=r"^cluster\.broker_config: an external cluster's brokers run their owner's"):
        refuse_a_cluster_unlike_the_plan(plan_of(asked), StandInCluster(owned=False))
    refuse_a_cluster_unlike_the_plan(plan_of(asked), StandInCluster(spec=ClusterSpec(**asked)))


@pytest.mark.parametrize("asked, has", [(64, 256), (None, None), (None, 256)])
def test_a_given_cluster_that_gives_what_the_scenario_asks_is_taken(asked, has):
    cluster = StandInCluster(spec=ClusterSpec(log_disk_mb=has))
    refuse_a_cluster_unlike_the_plan(plan_of({"log_disk_mb": asked}), cluster)


class FakeEngineContainer:
    """docker-py's container: its whole output, or the engine's last lines of it."""

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.asked = lines, []

    def logs(self, tail="all", **kw) -> bytes:
        self.asked.append(tail)
        kept = self.lines if tail == "all" else self.lines[-tail:]
        return "".join(f"{line}\n" for line in kept).encode()


class FakeContainer:
    def __init__(self, lines: list[str]) -> None:
        self.engine = FakeEngineContainer(lines)

    def get_wrapped_container(self) -> FakeEngineContainer:
        return self.engine


def test_a_log_tail_is_cut_by_the_engine_not_read_whole():
    container = FakeContainer([f"line {i}" for i in range(1000)])
    tail = log_tail(lambda: container_logs(container, tail=TAIL_LINES))
    assert tail.splitlines() == [f"line {i}" for i in range(1000 - TAIL_LINES, 1000)]
    assert container.engine.asked == [TAIL_LINES]


def test_a_log_that_cannot_be_read_is_said_so_in_the_tail():
    def broken():
        raise RuntimeError("engine gone")
    assert log_tail(broken) == "(no logs: engine gone)"


def test_a_cluster_whose_start_fails_in_a_with_block_is_stopped_and_the_error_kept():
    from harness.cluster.containers import StartedInWith

    class Half(StartedInWith):
        stopped = 0

        def start(self):
            raise RuntimeError("the second broker did not start")

        def stop(self):
            self.stopped += 1

    half = Half()
    with pytest.raises(RuntimeError, match="second broker"):
        with half:
            pass
    assert half.stopped == 1
