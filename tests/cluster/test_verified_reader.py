"""Issue 56: a verified read_committed reader, and the read-back of an output topic, behind a transaction left open
are not at the end. Its ends are the
partitions' high watermarks, asked read_uncommitted: a read_committed consumer's ListOffsets answers the last stable
offset, and a reader that took that for the end (as the first version did) reported reached_end while a member stuck
in send_offsets_to_transaction held every later committed record back (the eos-member-cut run of 2026-11-30 read
9,196 records as lost)."""
import json
import secrets

import pytest
from confluent_kafka import Producer

from harness.output_topic import read_back
from harness.scenario.schema import OutputSpec
from harness.verified import VerifiedReader

pytestmark = pytest.mark.cluster


def committed_then_held_open(kafka_cluster, topic: str) -> Producer:
    """Partition 0: a committed record at 0, then a record at 1 whose transaction stays open (its producer returned),
    so the partition's end is 3 (the commit's marker takes an offset) and its last stable offset 2."""
    kafka_cluster.create_topic(topic, 1, 3)
    headers = [("in-topic", b"t"), ("in-partition", b"0")]
    committed = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers, "transactional.id": f"{topic}-a"})
    committed.init_transactions(30)
    committed.begin_transaction()
    committed.produce(topic, b"committed", partition=0, headers=[*headers, ("in-offset", b"0")])
    committed.commit_transaction(30)
    open_one = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers, "transactional.id": f"{topic}-b"})
    open_one.init_transactions(30)
    open_one.begin_transaction()
    open_one.produce(topic, b"held open", partition=0, headers=[*headers, ("in-offset", b"1")])
    open_one.flush(30)  # written, its transaction never ended
    return open_one


def test_a_reader_behind_an_open_transaction_has_not_reached_the_end(kafka_cluster, tmp_path):
    topic = f"verified-{secrets.token_hex(3)}"
    open_one = committed_then_held_open(kafka_cluster, topic)
    reader = VerifiedReader(tmp_path, kafka_cluster.control_bootstrap_servers,
                            OutputSpec(topic=topic, partitions=1), "read_committed").start()
    reader.finish(8)
    assert reader.wait(60)
    summary = reader.summary()
    assert summary["error"] is None, summary
    assert summary["reached_end"] is False and summary["partitions"]["0"] == {"position": 2, "end": 3}, summary
    open_one.abort_transaction(30)


def test_the_read_back_waits_for_an_open_transaction_and_says_where_it_held_the_read(kafka_cluster, tmp_path):
    """Read read_committed: the read-back waits (its end the high watermark, not the end-of-partition event at the
    last stable offset) and, the transaction still open after its wait, says so in output.json; once the
    transaction ends, a read-back reads to the end with nothing held."""
    topic = f"read-back-{secrets.token_hex(3)}"
    open_one = committed_then_held_open(kafka_cluster, topic)
    output = OutputSpec(topic=topic, partitions=1, source="headers")
    said = read_back(tmp_path, kafka_cluster.control_bootstrap_servers, output, f"{topic}-g", {}, timeout_s=4)
    assert (said["rows"], said["held_open"]) == (1, {"0": {"position": 2, "end": 3}}), said
    assert json.loads((tmp_path / "output.json").read_text())["held_open"] == said["held_open"]
    open_one.commit_transaction(30)
    said = read_back(tmp_path / "after", kafka_cluster.control_bootstrap_servers, output, f"{topic}-g", {}, timeout_s=30)
    assert (said["rows"], said["held_open"]) == (2, {}), said
