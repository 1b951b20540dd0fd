"""Issue 56: a verified read_committed reader behind a transaction left open is not at the end. Its ends are the
partitions' high watermarks, asked read_uncommitted: a read_committed consumer's ListOffsets answers the last stable
offset, and a reader that took that for the end (as the first version did) reported reached_end while a member stuck
in send_offsets_to_transaction held every later committed record back (the eos-member-cut run of 2026-11-30 read
9,196 records as lost)."""
import secrets

import pytest
from confluent_kafka import Producer

from harness.scenario.schema import OutputSpec
from harness.verified import VerifiedReader

pytestmark = pytest.mark.cluster


def test_a_reader_behind_an_open_transaction_has_not_reached_the_end(kafka_cluster, tmp_path):
    topic = f"verified-{secrets.token_hex(3)}"
    kafka_cluster.create_topic(topic, 1, 3)
    committed = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers, "transactional.id": f"{topic}-a"})
    committed.init_transactions(30)
    committed.begin_transaction()
    committed.produce(topic, b"committed", partition=0)
    committed.commit_transaction(30)
    open_one = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers, "transactional.id": f"{topic}-b"})
    open_one.init_transactions(30)
    open_one.begin_transaction()
    open_one.produce(topic, b"held open", partition=0)
    open_one.flush(30)  # written, its transaction never ended
    reader = VerifiedReader(tmp_path, kafka_cluster.control_bootstrap_servers,
                            OutputSpec(topic=topic, partitions=1), "read_committed").start()
    reader.finish(8)
    assert reader.wait(60)
    summary = reader.summary()
    assert summary["error"] is None, summary
    assert summary["reached_end"] is False and summary["partitions"]["0"] == {"position": 2, "end": 3}, summary
    open_one.abort_transaction(30)
