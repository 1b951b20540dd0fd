"""Issue 40: coordinator.log keeps the lines every broker's group coordinator logged about the run's group, in time
order, and nothing of another group (a sweep's brokers serve many)."""
from harness import coordinator_log


def test_the_groups_lines_of_every_broker_in_time_order_and_no_other_groups(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kafka-1.log").write_text(
        "[2026-11-28 09:52:46,440] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=2] Preparing to "
        "rebalance group chaos-group-1 in state PreparingRebalance with old generation 0 (reason: x).\n"
        "[2026-11-28 09:52:46,441] INFO [GroupCoordinator id=1] Stabilized group chaos-group-12 generation 1 with 1 members.\n"
        "    at some.stack.Trace(chaos-group-1)\n"
        "[2026-11-28 09:52:48,000] INFO [ReplicaManager broker=1] chaos-group-1 is not a coordinator line\n")
    (logs / "kafka-2.log").write_text(
        "[2026-11-28 09:52:47,000] INFO [GroupCoordinator id=2 topic=__consumer_offsets partition=2] [GroupId "
        "chaos-group-1] Bumped group epoch to 2 with metadata hash 1.\n")
    (logs / "toxiproxy.log").write_text("chaos-group-1\n")
    assert coordinator_log.write(tmp_path, "chaos-group-1") == 2
    lines = (tmp_path / "coordinator.log").read_text().splitlines()
    assert [line[:25] for line in lines] == ["[2026-11-28 09:52:46,440]", "[2026-11-28 09:52:47,000]"]


def test_no_broker_logs_no_file(tmp_path):
    (tmp_path / "logs").mkdir()
    assert coordinator_log.write(tmp_path, "g") is None and not (tmp_path / "coordinator.log").exists()
