"""Issue 56: the exactly-once checks of what the verified readers read (analysis/checks/eos_reads.py) and the
transactions read from transactions/ (analysis/rundir/transactions.py), on planted files, counts by hand.

Member a writes output partition 0 of g-txn-out in four transactions: 1 (offsets 0-2) committed, its commit asked
at 1000; 2 (3-4) aborted; 3 (6-8) committed, asked at 1200; 4 (10-11) committed, asked at 1300. The planted reader
reads 3 (aborted: an aborted_read), 6 at 1150 (before 3's commit was asked: a precommitted_read), passes over 7
(transaction 3 torn, and a poll_skip) and reads 2 again after 8 (a nonmonotonic_poll)."""
import json
from types import SimpleNamespace

from analysis.checks import eos_reads
from analysis.rundir import transactions as txns

OUT = "g-txn-out"
WRITES = {1: ([0, 1, 2], "commit", 1000), 2: ([3, 4], "abort", 1100), 3: ([6, 7, 8], "commit", 1200),
          4: ([10, 11], "commit", 1300)}
HEALTHY = [(0, 1020), (1, 1020), (2, 1020), (6, 1220), (7, 1220), (8, 1220), (10, 1320), (11, 1320)]
PLANTED = [(0, 1020), (1, 1020), (2, 1020), (3, 1150), (6, 1150), (8, 1250), (2, 1260), (10, 1320), (11, 1320)]


def transaction_rows(member="a", writes=WRITES, first_input=0):
    """A member's transactions/ rows: per transaction number, its output offsets, its end and when it was asked;
    it consumed t:0 from first_input on, a record an output."""
    base = {"member": member, "transactional_id": f"g-{member}", "timeout_ms": 60000}
    rows, offset_in = [{**base, "ts_ms": 1, "op": "init", "txn": 0, "elapsed_ms": 5}], first_input
    for txn, (offsets, end, at) in writes.items():
        rows.append({**base, "ts_ms": at - 50, "op": "begin", "txn": txn})
        for o in offsets:
            rows.append({**base, "ts_ms": at - 40, "op": "send", "txn": txn, "input": f"t:0:{offset_in}"})
            rows.append({**base, "ts_ms": at - 30, "op": "ack", "txn": txn, "input": f"t:0:{offset_in}",
                         "partition": 0, "offset": o})
            offset_in += 1
        if end == "commit":
            rows.append({**base, "ts_ms": at - 20, "op": "send_offsets", "txn": txn, "elapsed_ms": 3,
                         "offsets": {"t:0": offset_in}})
        rows.append({**base, "ts_ms": at + 10, "op": end, "txn": txn, "elapsed_ms": 10})
    return rows


def inputs_of(rows) -> dict[int, int]:
    """Output offset -> the input offset its writer acknowledged writing there (a read of it holds that input)."""
    return {r["offset"]: int(r["input"].rsplit(":", 1)[1]) for r in rows if r["op"] == "ack"}


def read_rows(reads, rows, isolation="read_committed") -> list[dict]:
    written = inputs_of(rows)
    return [{"partition": 0, "offset": o, "topic": "t", "input_partition": 0, "input_offset": written.get(o, o),
             "member": "a", "read_at_ms": at, "isolation": isolation} for o, at in reads]


def plant(run_dir, reads, position=12, rows=None):
    rows = rows or transaction_rows()
    for folder, name, lines in (("transactions", "a.jsonl", rows), ("verified", "read_committed.jsonl",
                                                                    read_rows(reads, rows))):
        (run_dir / folder).mkdir(parents=True, exist_ok=True)
        (run_dir / folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    (run_dir / "verified" / "readers.json").write_text(json.dumps(
        {"read_committed": {"reached_end": True, "partitions": {"0": {"position": position, "end": position}}}}))
    return run_dir


def facts(run_dir):
    return SimpleNamespace(history=SimpleNamespace(transactions=txns.read(run_dir), output={"topic": OUT}))


def counts(run_dir) -> dict:
    x = facts(run_dir)
    return {name: getattr(eos_reads, name)(x).total for name in
            ("aborted_read", "precommitted_read", "torn_transaction", "nonmonotonic_poll", "poll_skip",
             "inconsistent_offsets")}


def test_transactions_by_outcome_and_commit_call():
    ts = txns.member_transactions(transaction_rows())
    assert [(t.name, t.outcome, t.commit_called_ms, [o for _, o, _ in t.acked]) for t in ts] == [
        ("a#1.1", "committed", 1000, [0, 1, 2]), ("a#1.2", "aborted", None, [3, 4]),
        ("a#1.3", "committed", 1200, [6, 7, 8]), ("a#1.4", "committed", 1300, [10, 11])]
    assert ts[2].offsets == {"t:0": 8}


def test_a_restarted_process_numbers_again_in_a_new_incarnation():
    writes = {1: ([0], "commit", 1000), 2: ([1], "commit", 1100)}
    restarted = transaction_rows(writes={1: ([2], "commit", 1300)})  # a new process: init, then its transaction 1
    rows = transaction_rows(writes=writes) + restarted
    names = [t.name for t in txns.member_transactions(rows)]
    assert names == ["a#1.1", "a#1.2", "a#2.1"]


def test_a_failed_commit_is_unknown_and_a_transaction_a_process_died_in_too():
    rows = transaction_rows(writes={1: ([0], "commit", 1000), 2: ([1], "commit", 1100)})
    rows[-1] = {**rows[-1], "error": "_TIMED_OUT", "error_class": "retriable"}
    rows.append({**rows[1], "ts_ms": 1200, "txn": 3})  # begun, then the process died
    assert [t.outcome for t in txns.member_transactions(rows)] == ["committed", "unknown", "unknown"]


def test_a_healthy_read_gives_nothing(tmp_path):
    assert counts(plant(tmp_path, HEALTHY)) == dict.fromkeys(counts(plant(tmp_path, HEALTHY)), 0)


def test_each_planted_anomaly_is_found_and_named(tmp_path):
    run_dir = plant(tmp_path, PLANTED)
    assert counts(run_dir) == {"aborted_read": 1, "precommitted_read": 1, "torn_transaction": 1,
                               "nonmonotonic_poll": 1, "poll_skip": 1, "inconsistent_offsets": 0}
    x = facts(run_dir)
    [aborted] = eos_reads.aborted_read(x).anomalies
    assert (aborted["topic"], aborted["offsets"], aborted["transaction"], aborted["outcome"]) == (
        OUT, [3, 3], "a#1.2", "aborted")
    [early] = eos_reads.precommitted_read(x).anomalies
    assert (early["offsets"], early["transaction"], early["commit_called_ms"], early["time_ms"]) == (
        [6, 6], "a#1.3", 1200, [1150, 1150])
    [torn] = eos_reads.torn_transaction(x).anomalies
    assert (torn["offsets"], torn["read_of_transaction"], torn["written"], torn["input"]) == ([7, 7], 2, 3, "t:0:6")
    [back] = eos_reads.nonmonotonic_poll(x).anomalies
    assert (back["offsets"], back["after_offset"], back["reader"]) == ([2, 2], 8, "read_committed")
    [skip] = eos_reads.poll_skip(x).anomalies
    assert (skip["offsets"], skip["transaction"]) == ([7, 7], "a#1.3")


def test_nothing_beyond_the_readers_position_is_judged(tmp_path):
    """The reader stopped at 9: transaction 4 (10-11) unread is neither a skip nor torn."""
    reads = [r for r in HEALTHY if r[0] < 10]
    assert counts(plant(tmp_path, reads, position=9))["poll_skip"] == 0
    assert counts(plant(tmp_path, reads, position=12))["poll_skip"] == 2


def test_a_commit_asked_in_the_same_millisecond_as_the_read_is_no_precommitted_read(tmp_path):
    reads = [(o, 1200 if o in (6, 7, 8) else at) for o, at in HEALTHY]
    assert counts(plant(tmp_path, reads))["precommitted_read"] == 0
    reads = [(o, 1197 if o in (6, 7, 8) else at) for o, at in HEALTHY]
    assert counts(plant(tmp_path, reads))["precommitted_read"] == 3


def test_the_transaction_figures_by_hand(tmp_path):
    from analysis.figures.transactions import figures, spread
    assert spread([5, 1, 3, 2, 4]) == {"p50": 3.0, "p99": 5.0, "max": 5, "n": 5} and spread([]) is None
    assert spread([10, 20]) == {"p50": 15.0, "p99": 19.9, "max": 20, "n": 2}  # linear between the nearest ranks
    run_dir = plant(tmp_path, HEALTHY)
    (run_dir / "verified" / "read_uncommitted.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in read_rows([(o, at - 15) for o, at in HEALTHY], transaction_rows(),
                                                 "read_uncommitted")))
    f = figures(txns.read(run_dir))
    assert (f["transactions"], f["by_outcome"], f["records_written"], f["records_committed"]) == (
        4, {"committed": 3, "aborted": 1}, 10, 8)
    assert f["commit_ms"] == {"p50": 10, "p99": 10, "max": 10, "n": 3}  # each commit row: elapsed_ms 10
    # transaction 1 ended at 1010 and was read at 1020; 3 at 1210, read at 1220; 4 at 1310, read at 1320
    assert f["read_after_commit_ms"] == {"p50": 10, "p99": 10, "max": 10, "n": 8}
    assert f["held_back_ms"] == {"p50": 15, "p99": 15, "max": 15, "n": 8}


def test_a_reader_left_below_the_end_is_a_stall_on_the_stable_offset(tmp_path):
    """The reader stopped at 3 of partition 0's 12: offset 3 is aborted transaction 2's, yet it holds the last stable
    offset: a hanging transaction, with its age from its ack (1070) to the reader's stop (9000) and the producer id
    an rpc rule saw; held at 6 instead (committed transaction 3's, ended at 1210, say its marker not there yet) it is
    open, and hanging when the reader gave up more than the markers' grace after that commit."""
    run_dir = plant(tmp_path, [r for r in HEALTHY if r[0] < 3], position=3)
    summary = json.loads((run_dir / "verified" / "readers.json").read_text())
    summary["read_committed"].update(reached_end=False, finished_at_ms=9000, partitions={"0": {"position": 3, "end": 12}})
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    x = facts(run_dir)
    x.history.faults = [SimpleNamespace(hits=[{"at_ms": 1060, "api": "Produce", "transactional_id": "g-a",
                                               "producer_id": 4001}])]
    [stall] = eos_reads.hanging_transactions(x)
    assert (stall["type"], stall["waiting_for"], stall["cause"], stall["offsets"], stall["transaction"]) == (
        "stall", "stable_offset", "hanging_transaction", [3, 3], "a#1.2")
    assert (stall["producer_id"], stall["age_ms"], stall["records_held"], stall["time_ms"]) == (4001, 7930, 9, [1070, 9000])
    summary["read_committed"]["partitions"]["0"]["position"] = 6
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    x = facts(run_dir)
    x.history.faults = []
    [stall] = eos_reads.hanging_transactions(x)
    assert (stall["cause"], stall["transaction"], stall["producer_id"]) == ("open_transaction", "a#1.3", None)
    summary["read_committed"]["finished_at_ms"] = 1210 + eos_reads.MARKER_GRACE_MS + 1  # committed, still held open
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    x = facts(run_dir)
    x.history.faults = []
    [stall] = eos_reads.hanging_transactions(x)
    assert (stall["cause"], stall["transaction"]) == ("hanging_transaction", "a#1.3")
    summary["read_committed"].update(reached_end=True)
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    assert eos_reads.hanging_transactions(facts(run_dir)) == []


def test_a_write_no_member_logged_held_open_by_its_leader_is_a_hanging_transaction(tmp_path):
    """The reader stopped at offset 5 of partition 0, which no member's transaction acknowledged; the partition's
    leader listed a transaction open from 5 (producer 4002, epoch 3) from the sample at 2000 on, still at the
    sampler's end (9500): a hanging transaction, its producer from DescribeProducers, its age from when the leader
    was first seen holding it."""
    run_dir = plant(tmp_path, [r for r in HEALTHY if r[0] < 3], position=5)
    summary = json.loads((run_dir / "verified" / "readers.json").read_text())
    summary["read_committed"].update(reached_end=False, finished_at_ms=9000, partitions={"0": {"position": 5, "end": 12}})
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    rows = [{"ts_ms": 100, "kind": "sampler", "interval_ms": 100},
            {"ts_ms": 2000, "kind": "producers", "partition": f"{OUT}:0", "leader": "b:1",
             "open": [{"producer_id": 4002, "producer_epoch": 3, "txn_start_offset": 5}]},
            {"ts_ms": 2100, "kind": "producers", "partition": f"{OUT}:1", "leader": "b:2", "open": []},
            {"ts_ms": 8000, "kind": "producers", "partition": f"{OUT}:0", "leader": "b:1",
             "open": [{"producer_id": 4002, "producer_epoch": 3, "txn_start_offset": 5},
                      {"producer_id": 4003, "producer_epoch": 0, "txn_start_offset": 11}]},
            {"ts_ms": 9500, "kind": "sampler_end", "samples": 90}]
    (run_dir / "transaction-states.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    held = txns.held_open(rows)
    assert held == {(0, 5): txns.Held(4002, 3, 2000, 9500), (0, 11): txns.Held(4003, 0, 8000, 9500)}
    x = facts(run_dir)
    x.history.faults = []
    [stall] = eos_reads.hanging_transactions(x)
    assert (stall["cause"], stall.get("transaction"), stall["producer_id"], stall["producer_epoch"]) == (
        "hanging_transaction", None, 4002, 3)
    assert (stall["age_ms"], stall["records_held"], stall["held_open_until_ms"]) == (7000, 7, 9500)


def test_an_offset_holding_another_record_than_its_writer_acknowledged_is_inconsistent(tmp_path):
    """Offset 2 acknowledged as input t:0:2 is read read_committed holding t:0:9; offset 5, which no transaction
    acknowledged, is read as t:0:20 by read_committed and as t:0:21 by read_uncommitted: two inconsistent offsets,
    one against the writer's ack and one against the other reader."""
    rows = transaction_rows()
    committed = read_rows(HEALTHY, rows)
    committed[2]["input_offset"] = 9
    committed.append({**committed[0], "offset": 5, "input_offset": 20, "read_at_ms": 1400})
    run_dir = plant(tmp_path, HEALTHY)
    (run_dir / "verified" / "read_committed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in committed))
    uncommitted = [{**r, "isolation": "read_uncommitted"} for r in read_rows(HEALTHY, rows)]
    uncommitted.append({**uncommitted[0], "offset": 5, "input_offset": 21, "read_at_ms": 1410})
    (run_dir / "verified" / "read_uncommitted.jsonl").write_text("".join(json.dumps(r) + "\n" for r in uncommitted))
    found = eos_reads.inconsistent_offsets(facts(run_dir)).anomalies
    assert [(a["offsets"], a["read"], a["expected"], a["against"], a["reader"], a.get("transaction")) for a in found] == [
        ([2, 2], "t:0:9", "t:0:2", "ack", "read_committed", "a#1.1"),
        ([5, 5], "t:0:21", "t:0:20", "another reader", "read_uncommitted", None)]


def test_a_committed_transaction_whose_offsets_are_not_one_past_its_last_input_is_an_offset_output_mismatch(tmp_path):
    """Offset/output atomicity: transaction 3 wrote output for inputs t:0:5-7 and committed t:0 at 10 (two inputs
    past what it transformed); transaction 4 committed t:1 at 3 with no output from t:1. Aborted transaction 2 has no
    offsets and is not judged; 1 and 4's t:0 match."""
    from analysis.checks import eos
    rows = transaction_rows()
    for r in rows:
        if r["op"] == "send_offsets" and r["txn"] == 3:
            r["offsets"] = {"t:0": 10}
        if r["op"] == "send_offsets" and r["txn"] == 4:
            r["offsets"] = {**r["offsets"], "t:1": 3}
    found = eos.offset_output_mismatch(facts(plant(tmp_path, HEALTHY, rows=rows))).anomalies
    assert [(a["transaction"], a["topic"], a["partition"], a["committed_offset"], a["last_input_written"], a["offsets"])
            for a in found] == [("a#1.3", "t", 0, 10, 7, [8, 10]), ("a#1.4", "t", 1, 3, None, [3, 3])]
    assert eos.offset_output_mismatch(facts(plant(tmp_path, HEALTHY))).anomalies == []


def test_a_transactional_runs_percentiles_are_sparks_as_the_latency_figures_are(spark):
    """One definition of a percentile: the transactions' spread() gives what Spark's `percentile` (the latency
    figures') gives over the same values."""
    import random
    from analysis.figures.latency import QUANTILES
    from analysis.figures.transactions import spread
    rng = random.Random(7)
    values = [rng.randint(0, 5000) for _ in range(997)]
    [row] = spark.createDataFrame([(v,) for v in values], "ms long").selectExpr(
        f"percentile(ms, array({', '.join(map(str, QUANTILES))})) as q").collect()
    mine = spread(values)
    assert (mine["p50"], mine["p99"]) == (round(row["q"][0], 1), round(row["q"][1], 1))


def test_inputs_written_behind_a_transaction_left_open_are_held_not_lost(tmp_path):
    """The reader stopped at 6 of partition 0's 12: transactions 3 and 4 wrote offsets 6-8 and 10-11 for inputs
    t:0:5-9, which read_committed cannot see (held, not known lost); inputs 0-4, written below 6, are not held. A
    reader that reached the end holds nothing."""
    run_dir = plant(tmp_path, [r for r in HEALTHY if r[0] < 6], position=6)
    summary = json.loads((run_dir / "verified" / "readers.json").read_text())
    summary["read_committed"].update(reached_end=False, partitions={"0": {"position": 6, "end": 12}})
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    assert txns.read(run_dir).held_inputs == {("t", 0): {5, 6, 7, 8, 9}}
    summary["read_committed"].update(reached_end=True, partitions={"0": {"position": 12, "end": 12}})
    (run_dir / "verified" / "readers.json").write_text(json.dumps(summary))
    assert txns.read(run_dir).held_inputs == {}
