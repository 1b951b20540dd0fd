"""Acks without an offset (status `unplaced`, workloads/producer.py: librdkafka 2.16.0's first record to a partition
just added): the scan counts them as a side of their own, and `lost_unplaced` judges each one never consumed by the
producer's next ok record in its partition (spark_plan.unplaced_acks, asked only when there are some)."""
import pytest

from analysis import analyze

from analysis.engine import spark_plan
from analysis_runs import T0, clean_run, seq_of, write_table

NEW = seq_of(1, 0) - 1  # p0's first record to t:1, before every ok record there (offset 0 up, seq 1,000,000 up)


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


@pytest.fixture
def asked(monkeypatch):
    """How often the analysis asked Spark about the unplaced acks."""
    calls = []
    real = spark_plan.unplaced_acks
    monkeypatch.setattr(spark_plan, "unplaced_acks", lambda *args: calls.append(args) or real(*args))
    return calls


def test_an_unplaced_ack_never_consumed_in_a_partition_read_past_it_is_lost(tmp_path, spark, fmt, asked):
    r = clean_run(tmp_path / "run", fmt).produce_unplaced("t", 1, NEW, at=5)
    s = analyze(r.write(), spark=spark)
    [a] = of(s, "lost_unplaced")
    assert a == {"type": "lost_unplaced", "topic": "t", "partition": 1, "offsets": None, "count": 1, "members": [],
                 "generations": [], "time_ms": [T0 + 5, T0 + 5], "producer_id": "p0", "seq": NEW, "next_ok_offset": 0,
                 "read_up_to": 99, "fault_ids": [], "reason": a["reason"]}
    assert "next ok record in the partition (a higher seq) is at offset 0" in a["reason"]
    assert s["valid"] is False and s["anomaly_counts"]["lost_unplaced"] == 1
    assert {k: n for k, n in s["anomaly_counts"].items() if n} == {"lost_unplaced": 1}
    assert s["checks"]["lost_unplaced"] == {"ran": True, "status": "ran", "count": 1, "unplaced": 1,
                                            "unplaced_consumed": 0, "unplaced_unseen": 0}
    assert s["produced_by_status"] == {"ok": 200, "fail": 0, "info": 0, "unplaced": 1}
    assert s["produced_records"] == 200 and s["lost_records"] == 0 and len(asked) == 1


def test_an_unplaced_ack_consumed_was_written(tmp_path, spark, fmt):
    """Its producer_id/seq was consumed (here at t:1@100): written after all. No anomaly; the consumed record no ok ack
    places is counted in consumed_unacked, as any such record is, and it is one copy, no duplicate write."""
    r = clean_run(tmp_path / "run", fmt).produce_unplaced("t", 1, NEW, at=5)
    r.consume("b", "t", 1, [100], at=350, generation=1)
    r.consumed["b"][-1]["seq"] = NEW
    s = analyze(r.write(), spark=spark)
    assert s["anomalies"] == [] and s["valid"] is True, s["anomalies"]
    assert s["checks"]["lost_unplaced"] == {"ran": True, "status": "ran", "count": 0, "unplaced": 1,
                                            "unplaced_consumed": 1, "unplaced_unseen": 0}
    assert s["anomaly_counts"]["duplicate_write"] == 0 and s["checks"]["duplicate_write"]["unacked_records"] == 1
    assert s["consumed_unacked"] == 1 and s["lost_records"] == 0


def test_an_unplaced_ack_whose_place_was_not_read_past_is_unseen(tmp_path, spark, fmt):
    """Never consumed, and either nothing of its producer was acked after it in the partition (seq 2,000,000), or the
    next ok record (t:1@100, acked after the group's last commit there) lies beyond what the group read: no finding,
    each counted in unplaced_unseen."""
    r = clean_run(tmp_path / "run", fmt).produce_unplaced("t", 1, 2 * 10**6, at=5)
    r.produce_unplaced("t", 1, seq_of(1, 100), at=390).produce("t", 1, range(100, 105), at=391)
    for row in r.produced[-5:]:
        row["seq"] += 1
    s = analyze(r.write(), spark=spark)
    assert of(s, "lost_unplaced") == [] and s["anomaly_counts"]["lost_unplaced"] == 0
    assert s["checks"]["lost_unplaced"] == {"ran": True, "status": "ran", "count": 0, "unplaced": 2,
                                            "unplaced_consumed": 0, "unplaced_unseen": 2}
    assert s["unseen_records"] == 5 and s["valid"] is True  # t:1@100-104: still in Kafka


def test_a_run_without_unplaced_acks_asks_nothing(tmp_path, spark, asked):
    s = analyze(clean_run(tmp_path / "run", "parquet").write(), spark=spark)
    assert asked == []
    assert s["checks"]["lost_unplaced"] == {"ran": True, "status": "ran", "count": 0, "unplaced": 0,
                                            "unplaced_consumed": 0, "unplaced_unseen": 0}
    assert s["produced_by_status"]["unplaced"] == 0 and s["valid"] is True


def test_files_without_the_columns_the_question_reads(tmp_path, spark, asked):
    """Parquet files without status (produced) or producer_id/seq (consumed) beside those with them: their readers
    cannot filter on a column they lack, and they hold no row the question wants."""
    r = clean_run(tmp_path / "run", "parquet").produce_unplaced("t", 1, NEW, at=5)
    rd = r.write()
    bare = ("topic", "partition", "offset", "acked_at_ms")
    write_table(rd / "produced" / "old.parquet", [{"topic": "u", "partition": 0, "offset": o, "acked_at_ms": T0 + o}
                                                  for o in range(3)], {k: t for k, t in zip(bare, ("string", "int32", "int64", "int64"))}, "parquet")
    write_table(rd / "consumed" / "c.parquet", [{"topic": "u", "partition": 0, "offset": o, "member": "c",
                                                 "consumed_at_ms": T0 + 10 + o} for o in range(3)],
                {"topic": "string", "partition": "int32", "offset": "int64", "member": "string", "consumed_at_ms": "int64"},
                "parquet")
    s = analyze(rd, spark=spark)
    assert [(a["topic"], a["partition"], a["seq"]) for a in of(s, "lost_unplaced")] == [("t", 1, NEW)]
    assert s["checks"]["lost_unplaced"]["unplaced"] == 1 and len(asked) == 1
    assert s["produced_records"] == 203 and s["lost_records"] == 0
