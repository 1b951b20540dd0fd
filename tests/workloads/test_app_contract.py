"""Library mode's contract writer (workloads/app.py ContractLog), driven by a scripted consumer with no cluster: the
run directory it writes is one analysis/rundir/contract.py accepts, every consumed row is on disk before the commit
that covers it is logged as sent, and the window pairs each sending with its answer. The real consumer runs it in
examples/python (a cluster test)."""
import json
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from analysis.api import contract
from workloads.app import ContractLog, program_settings, row_of
from workloads.config import ClientRelease, MemberConfig, ProcessingConfig


def member_config(run_dir, **changes) -> MemberConfig:
    cfg = MemberConfig(member="member-1", run_dir=str(run_dir), client="command", release=ClientRelease(),
                       bootstrap_servers="127.0.0.1:1", group_id="g", topics=["t"], pattern=None,
                       metadata_refresh_ms=None, protocol="classic", assignor="range", remote_assignor=None,
                       session_timeout_ms=10_000, heartbeat_interval_ms=1000, max_poll_interval_ms=300_000,
                       commit="sync", auto_commit_interval_ms=None, processing=ProcessingConfig(), batch_size=500)
    return replace(cfg, **changes)


class Message:
    """What a confluent_kafka Message gives the writer."""

    def __init__(self, partition: int, offset: int, value: bytes = b"producer-1:7") -> None:
        self._partition, self._offset, self._value = partition, offset, value

    def topic(self): return "t"
    def partition(self): return self._partition
    def offset(self): return self._offset
    def value(self): return self._value
    def key(self): return b"k"


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def scripted(log: ContractLog, run_dir) -> list[int]:
    """A consumer's life: two records processed (rows not flushed, as app.Consumer.processed writes them), a
    synchronous commit of both, an asynchronous one answered later, a failed one. Returns how many consumed rows were
    on disk each time a commit was sent."""
    on_disk = []

    def send():
        on_disk.append(len(lines(run_dir / "consumed" / "member-1.jsonl")))

    log.event("assigned", partitions=["t:0"], member_id="m-1")
    log.rows([row_of(Message(0, o), "member-1", 1000 + o, 1, log.take_n(), None, "app") for o in (0, 1)], flush=False)
    log.commit([TopicPartition("t", 0, 2)], send, asynchronous=False)
    log.rows([row_of(Message(0, 2), "member-1", 1003, 1, log.take_n(), None, "app")], flush=False)
    log.commit([TopicPartition("t", 0, 3)], send, asynchronous=True)
    log.answer(None, [TopicPartition("t", 0, 3)])

    def refused():
        send()
        raise KafkaException(KafkaError(KafkaError.REBALANCE_IN_PROGRESS))

    with pytest.raises(KafkaException):
        log.commit([TopicPartition("t", 0, 3)], refused, asynchronous=False)
    log.event("stopped")
    log.close()
    return on_disk


def test_a_scripted_consumer_writes_a_run_directory_the_contract_accepts(tmp_path):
    log = ContractLog(member_config(tmp_path), "app")
    scripted(log, tmp_path)
    consumed, events = lines(tmp_path / "consumed" / "member-1.jsonl"), lines(tmp_path / "events" / "member-1.jsonl")
    for table, rows in (("consumed", consumed), ("events", events)):
        for i, row in enumerate(rows, 1):
            contract.check_object(table, row, f"{table}/member-1.jsonl:{i}")
    assert [r["n"] for r in consumed] == [0, 1, 2] and {r["producer_id"] for r in consumed} == {"producer-1"}
    kinds = [e["kind"] for e in events]
    assert kinds == ["assigned", "commit_sent", "committed", "commit_sent", "committed", "commit_sent",
                     "commit_failed", "stopped"]
    sent = [e for e in events if e["kind"] == "commit_sent"]
    answers = [e for e in events if e["kind"] in ("committed", "commit_failed")]
    assert [a["commit_id"] for a in answers] == [s["commit_id"] for s in sent] == [0, 1, 2]
    assert all(a["requested_at_ms"] >= s["ts_ms"] - 1 for a, s in zip(answers, sent))
    assert answers[-1]["detail"].startswith("REBALANCE_IN_PROGRESS")


def test_every_processed_row_is_on_disk_before_its_commit_is_sent(tmp_path):
    assert scripted(ContractLog(member_config(tmp_path), "app"), tmp_path) == [2, 3, 3]


class NoFlushBeforeSending(ContractLog):
    """The writer with the one rule taken out: rows are not flushed before commit_sent."""

    def commit(self, offsets, send, asynchronous):
        flush, self.consumed.flush = self.consumed.flush, lambda: None
        try:
            return super().commit(offsets, send, asynchronous)
        finally:
            self.consumed.flush = flush


def test_the_flush_test_fails_without_the_flush(tmp_path):
    """The test above can fail: the same script on a writer that does not flush finds the rows missing."""
    assert scripted(NoFlushBeforeSending(member_config(tmp_path), "app"), tmp_path) != [2, 3, 3]


def test_a_restarted_member_goes_on_from_its_logs_last_n(tmp_path):
    log = ContractLog(member_config(tmp_path), "app")
    scripted(log, tmp_path)
    assert ContractLog(member_config(tmp_path), "app").take_n() == 3


def test_the_runs_identity_wins_and_the_programs_commit_choice_stays(tmp_path):
    cfg = member_config(tmp_path, instance_id="instance-1", extra={"fetch.min.bytes": 1})
    settings = program_settings(cfg, {"bootstrap.servers": "mine:9092", "group.id": "mine", "client.id": "app-1",
                                      "enable.auto.commit": True, "auto.offset.reset": "latest", "linger.ms": 5})
    assert settings["bootstrap.servers"] == "127.0.0.1:1" and settings["group.id"] == "g"
    assert settings["client.id"] == "member-1" and settings["group.instance.id"] == "instance-1"
    assert settings["enable.auto.commit"] is True and settings["auto.offset.reset"] == "latest"
    assert settings["linger.ms"] == 5 and settings["fetch.min.bytes"] == 1
    assert settings["partition.assignment.strategy"] == "range"
