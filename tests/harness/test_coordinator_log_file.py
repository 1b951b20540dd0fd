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


def test_the_transaction_coordinators_lines_of_the_runs_transactional_ids_and_their_partitions_moves(tmp_path):
    """Issue 56: beside the group's, the lines naming a transactional id of the run (`<group id>-...`) and the moves of
    the __transaction_state partitions those ids live on (48 here; 11's move and chaos-group-12's id are not the
    run's). Lines as Kafka 4.3.1 logged them."""
    logs = tmp_path / "logs"
    logs.mkdir()
    txn = "INFO [TransactionCoordinator id=3]"
    (logs / "kafka-3.log").write_text(
        f"[2026-11-30 20:00:18,471] {txn} Elected as the txn coordinator for partition 48 at epoch 0 "
        "(kafka.coordinator.transaction.TransactionCoordinator)\n"
        f"[2026-11-30 20:00:18,473] {txn} Resigned as the txn coordinator for partition 11 at epoch Some(0) "
        "(kafka.coordinator.transaction.TransactionCoordinator)\n"
        f"[2026-11-30 20:00:20,233] {txn} Initialized transactionalId chaos-group-1-member-2 with producerId 2000 and "
        "producer epoch 0 on partition __transaction_state-48 (kafka.coordinator.transaction.TransactionCoordinator)\n"
        f"[2026-11-30 20:00:20,300] {txn} Initialized transactionalId chaos-group-12-member-1 with producerId 7 and "
        "producer epoch 0 on partition __transaction_state-11 (kafka.coordinator.transaction.TransactionCoordinator)\n"
        "[2026-11-30 20:00:21,000] INFO [Transaction State Manager 3]: chaos-group-1-member-2 not a coordinator line\n")
    assert coordinator_log.write(tmp_path, "chaos-group-1") == 2
    lines = (tmp_path / "coordinator.log").read_text().splitlines()
    assert ["partition 48 at epoch 0" in lines[0], "chaos-group-1-member-2 with producerId 2000" in lines[1]] == [True, True]
