"""Issue 3: every anomaly type planted in a tiny history and found exactly; ownership, budget, attribution."""
import pytest

from analysis import analyze
from analysis.checks import checks_needing
from analysis.rundir.history import History, rebuild_ownership, Event
from analysis_runs import T0, Run

EAGER = "protocol=classic assignor=range"
COOP = "protocol=classic assignor=cooperative-sticky"


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def handover(root, fmt, start_b=40, commit_a=40):
    """a owns t:0 and t:1 in generation 1, commits t:0 at `commit_a`, is revoked at 1000; in generation 2
    b gets t:0 and starts at `start_b`, a keeps t:1."""
    r = Run(root, fmt)
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail=EAGER)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=100, generation=1)
    r.consume("a", "t", 1, range(0, 50), at=100, generation=1)
    r.event("a", "committed", 200, offsets={"t:0": commit_a, "t:1": 50}, generation=1)
    r.event("a", "revoked", 1000, ["t:0", "t:1"], generation=1).event("b", "revoked", 1000, [], generation=1)
    r.event("a", "assigned", 1300, ["t:1"], generation=2).event("b", "assigned", 1300, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(start_b, 100), at=1400, generation=2)
    r.consume("a", "t", 1, range(50, 100), at=1400, generation=2)
    r.event("b", "committed", 1600, offsets={"t:0": 100}, generation=2)
    r.event("a", "committed", 1600, offsets={"t:1": 100}, generation=2)
    r.event("a", "stopped", 2000).event("b", "stopped", 2000)
    return r


def test_duplicate_with_members_and_generations_inside_the_budget(tmp_path, spark, fmt):
    s = analyze(handover(tmp_path / "run", fmt).write(), spark=spark)
    dups = of(s, "duplicate")
    assert s["duplicated_offsets"] == 10 and s["anomaly_counts"]["duplicate"] == 10
    assert [(d["partition"], d["offsets"], d["count"], d["members"], d["generations"], d["budget"]) for d in dups] == \
        [(0, [40, 49], 10, ["a", "b"], [1, 2], "within")]
    assert "a's uncommitted tail" in dups[0]["reason"]
    assert s["anomaly_counts"]["duplicate_over_budget"] == 0
    assert s["valid"] is True  # at-least-once allows these


def test_budget_rule_one_inside_one_outside(tmp_path, spark, fmt):
    """b restarts at 35 although a committed 40: 35-39 are not in a's uncommitted tail (over budget),
    40-49 are (inside the budget)."""
    s = analyze(handover(tmp_path / "run", fmt, start_b=35, commit_a=40).write(), spark=spark)
    assert s["duplicated_offsets"] == 15
    over = of(s, "duplicate_over_budget")
    assert [(a["partition"], a["offsets"], a["count"]) for a in over] == [(0, [35, 39], 5)]
    assert "below a's last commit (40)" in over[0]["reason"]
    assert s["anomaly_counts"]["duplicate_over_budget"] == 5
    assert {tuple(d["offsets"]): d["budget"] for d in of(s, "duplicate")} == {(35, 39): "over", (40, 49): "within"}
    assert s["valid"] is False


def test_two_owners_at_once_is_over_budget(tmp_path, spark):
    """b consumes t:0 while a still owns it (no revocation): every duplicate is over budget."""
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(20))
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(20), at=100).consume("b", "t", 0, range(10, 20), at=200)
    s = analyze(r.write(), spark=spark)
    over = of(s, "duplicate_over_budget")
    assert [(a["offsets"], a["count"]) for a in over] == [([10, 19], 10)]
    assert "two owners" in over[0]["reason"]


def test_skip_inside_one_ownership(tmp_path, spark, fmt):
    """a jumps 10-14 and, in another block, 70-199 (known records): skips and losses. b starts t:1 above
    the committed offset after a hand-over: lost, but not a skip inside an ownership."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(250)).produce("t", 1, range(40))
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1)
    r.consume("a", "t", 0, list(range(0, 10)) + list(range(15, 70)) + list(range(200, 250)), at=100)
    r.consume("a", "t", 1, range(0, 20), at=100)
    r.event("a", "committed", 500, offsets={"t:1": 20})
    r.event("a", "revoked", 1000, ["t:1"]).event("b", "assigned", 1100, ["t:1"], generation=2)
    r.consume("b", "t", 1, range(25, 40), at=1200)
    s = analyze(r.write(), spark=spark)
    skips = of(s, "skip")
    assert [(a["partition"], a["offsets"], a["count"], a["members"]) for a in skips] == \
        [(0, [10, 14], 5, ["a"]), (0, [70, 199], 130, ["a"])]
    assert s["anomaly_counts"]["skip"] == 135
    assert s["lost_records"] == 140
    assert s["anomaly_counts"]["backwards"] == 0


def test_backwards_inside_one_ownership(tmp_path, spark, fmt):
    """a goes back from 20 to 10 without a rebalance; b steps out of order (9 -> 20 -> 10) without re-reading
    anything: one step back, and no skip (10-19 were consumed in that ownership, only late); c is revoked and
    gets the partition back, restarting from its commit: not backwards."""
    r = Run(tmp_path / "run", fmt)
    for p in range(3):
        r.produce("t", p, range(40))
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, ["t:1"], generation=1)
    r.event("c", "assigned", 10, ["t:2"], generation=1)
    r.consume("a", "t", 0, list(range(0, 21)) + list(range(10, 40)), at=100)
    r.consume("b", "t", 1, list(range(0, 10)) + list(range(20, 40)) + list(range(10, 20)), at=100)
    r.consume("c", "t", 2, range(0, 30), at=100)
    r.event("c", "committed", 200, offsets={"t:2": 25})
    r.event("c", "revoked", 500, ["t:2"]).event("c", "assigned", 700, ["t:2"], generation=2)
    r.consume("c", "t", 2, range(25, 40), at=800)
    s = analyze(r.write(), spark=spark)
    back = sorted((a["partition"], a["from_offset"], a["to_offset"], a["members"][0]) for a in of(s, "backwards"))
    assert back == [(0, 20, 10, "a"), (1, 39, 10, "b")]
    assert s["anomaly_counts"]["backwards"] == 2
    assert of(s, "skip") == []
    over = of(s, "duplicate_over_budget")
    assert [(a["partition"], a["offsets"]) for a in over] == [(0, [10, 20])]
    assert "inside the same ownership" in over[0]["reason"]
    assert [(d["partition"], d["offsets"], d["budget"]) for d in of(s, "duplicate") if d["partition"] == 2] == [(2, [25, 29], "within")]
    assert s["lost_records"] == 0


def test_reordering_inside_one_block_is_backwards(tmp_path, spark, fmt):
    """0..63 consumed as 0, 1, 3, 2, 4, ..., 63 (one record per ms): no repeat, no gap, the block's first and last
    records in place. The step back from 3 to 2 is found, with its times and generation."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(64))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, [0, 1, 3, 2] + list(range(4, 64)), at=100, generation=1)
    s = analyze(r.write(), spark=spark)
    assert [(a["from_offset"], a["to_offset"], a["generations"], a["time_ms"]) for a in of(s, "backwards")] == \
        [(3, 2, [1], [T0 + 102, T0 + 103])]
    assert s["valid"] is False and s["anomaly_counts"]["backwards"] == 1
    assert s["anomaly_counts"]["skip"] == 0 and s["anomaly_counts"]["duplicate"] == 0


def test_two_files_of_one_name_are_two_logs(tmp_path, spark, fmt):
    """a's log in two folders under one file name (consumed/ is searched recursively): 0-31 in one, 32-63 in the
    other, each in order. The files are told apart by their paths, so no position of one is taken for the other's
    and nothing steps back; a swap inside the second file is found as the one step back."""
    from analysis_runs import CONSUMED_TYPES, write_table
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(64))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(32), at=100, generation=1).consume("a", "t", 0, [32, 34, 33] + list(range(35, 64)), at=200,
                                                                     generation=1)
    rows = r.consumed.pop("a")
    rd = r.write()
    write_table(rd / "consumed" / "one" / f"a.{fmt}", rows[:32], CONSUMED_TYPES, fmt)
    write_table(rd / "consumed" / "two" / f"a.{fmt}", rows[32:], CONSUMED_TYPES, fmt)
    s = analyze(rd, spark=spark)
    assert [(a["from_offset"], a["to_offset"]) for a in of(s, "backwards")] == [(34, 33)]
    assert s["anomaly_counts"]["duplicate"] == 0 and s["lost_records"] == 0 and s["anomaly_counts"]["skip"] == 0


@pytest.mark.slow  # make test's 30 minutes: reordering inside a block at small scale runs there
@pytest.mark.parametrize("fmt_", ["parquet", "jsonl"])
def test_reordering_inside_one_block_is_backwards_at_1m_records(tmp_path, spark, fmt_):
    """Issue 8: at 1M consumed records, two records swapped strictly inside one 64-offset block (no repeat, no
    gap, the block's first and last record in place) are one step back, and nothing else is reported. The
    member's log interleaves four partitions record by record (the hardest layout for the log chunks)."""
    import numpy as np
    import pyarrow as pa
    n, parts = 1_000_000, 4
    r = Run(tmp_path / "run", fmt_)
    r.event("a", "assigned", 10, [f"t:{p}" for p in range(parts)], generation=1)
    rd = r.write()
    per = n // parts
    offs = np.tile(np.arange(per, dtype=np.int64), parts).reshape(parts, per).T.reshape(-1)
    part = np.tile(np.arange(parts, dtype=np.int32), per)
    i = np.flatnonzero((part == 2) & (offs == 64 * 777 + 20))[0]
    j = np.flatnonzero((part == 2) & (offs == 64 * 777 + 21))[0]
    offs[i], offs[j] = offs[j], offs[i]
    ts = T0 + 100 + np.arange(n, dtype=np.int64) // 50
    consumed = pa.table({"topic": pa.array(["t"] * n), "partition": pa.array(part), "offset": pa.array(offs),
                         "member": pa.array(["a"] * n), "consumed_at_ms": pa.array(ts)})
    produced = pa.table({"topic": pa.array(["t"] * n), "partition": pa.array(np.repeat(np.arange(parts, dtype=np.int32), per)),
                         "offset": pa.array(np.tile(np.arange(per, dtype=np.int64), parts)),
                         "acked_at_ms": pa.array(np.full(n, T0, np.int64))})
    for sub, table in (("consumed", consumed), ("produced", produced)):
        for old in (rd / sub).glob("*"):
            old.unlink()
        if fmt_ == "parquet":
            import pyarrow.parquet as pq
            pq.write_table(table, rd / sub / "x.parquet", row_group_size=100_000)
        else:
            import pyarrow.json  # noqa: F401  (written with pandas: one object per line)
            table.to_pandas().to_json(rd / sub / "x.jsonl", orient="records", lines=True)
    s = analyze(rd, spark=spark)
    back = of(s, "backwards")
    assert [(a["partition"], a["from_offset"], a["to_offset"]) for a in back] == [(2, 64 * 777 + 21, 64 * 777 + 20)]
    # no faults.jsonl, no producer_id/seq, no state/, no exactly-once promised: those checks did not run, so their
    # counts are unknown (None), never 0
    assert s["anomaly_counts"] == {**{k: 0 for k in s["anomaly_counts"]}, "backwards": 1, "unhealed_fault": None,
                                   "duplicate_write": None, "lost_unplaced": None, "state_duplicate": None,
                                   **{name: None for name in checks_needing("state", "eos", "verified")}}
    assert s["consumed_rows"] == n and s["lost_records"] == 0


def test_commit_regression(tmp_path, spark):
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(30))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(30), at=100)
    for at, off in ((200, 10), (300, 20), (400, 15), (500, 30)):
        r.event("a", "committed", at, offsets={"t:0": off}, generation=1)
    r.event("a", "commit_failed", 450, offsets={"t:0": 1}, generation=1)  # failed commits do not count
    s = analyze(r.write(), spark=spark)
    regs = of(s, "commit_regression")
    assert [(a["from_offset"], a["to_offset"], a["members"], a["time_ms"]) for a in regs] == [(20, 15, ["a"], [T0 + 300, T0 + 400])]
    assert s["anomaly_counts"]["commit_regression"] == 1 and s["valid"] is False


def test_unhealed_fault_and_attribution(tmp_path, spark):
    """Lost records at ~1000 ms fall in f1's window; duplicates at ~6100 ms only with enough grace for f2;
    f3 never healed."""
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(10), at=1000).produce("t", 1, range(10), at=0)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1)
    r.consume("a", "t", 0, [o for o in range(10) if o != 5], at=1050)
    r.consume("a", "t", 1, range(10), at=100)
    r.event("a", "revoked", 5500, ["t:1"], generation=1).event("b", "assigned", 5600, ["t:1"], generation=2)
    r.consume("b", "t", 1, range(5, 10), at=6100)  # a's uncommitted tail: duplicates inside the budget
    r.fault("f1", 900, 1200).fault("f2", 5000, 6000).fault("f3", 9000, None)
    rd = r.write()
    s = analyze(rd, spark=spark, grace_ms=0)
    assert [a["fault_ids"] for a in of(s, "lost")] == [["f1"]]
    assert [a["fault_ids"] for a in of(s, "duplicate")] == [[]]
    assert [(a["fault_ids"], a["kind"], a["target"]) for a in of(s, "unhealed_fault")] == [(["f3"], "pause", "kafka-1")]
    assert s["anomaly_counts"]["unhealed_fault"] == 1 and s["valid"] is False
    faults = {f["id"]: f for f in s["faults"]}
    assert faults["f1"]["anomalies"] == {"lost": 1, "skip": 1} and faults["f3"]["healed_at_ms"] is None
    s = analyze(rd, spark=spark, grace_ms=200)
    assert [a["fault_ids"] for a in of(s, "duplicate")] == [["f2"]]
    assert {f["id"]: f["anomalies"] for f in s["faults"]}["f2"] == {"duplicate": 5}


def test_rebalance_figures(tmp_path, spark):
    """Two eager rebalances; in the second one t:0 and t:1 have no owner for 300 ms each."""
    r = handover(tmp_path / "run", "jsonl")
    r.fault("f1", 900, 1100)
    s = analyze(r.write(), spark=spark, grace_ms=0)
    fig = s["rebalance_figures"]
    assert s["rebalances"] == 2 and [x["generation"] for x in fig["rounds"]] == [1, 2]
    assert fig["rounds"][1]["start_ms"] == T0 + 1000 and fig["rounds"][1]["end_ms"] == T0 + 1300
    windows = {(w["topic"], w["partition"]): w for w in fig["no_owner_by_partition"]}
    assert windows[("t", 0)]["windows"] == [[T0 + 1000, T0 + 1300]] and windows[("t", 1)]["total_ms"] == 300
    assert fig["no_owner_total_ms"] == 600 and fig["no_owner_longest_ms"] == 300
    assert fig["revocations_while_alive"] == {"partitions_revoked": 2, "by_member": {"a": 2}}
    f1 = s["faults"][0]
    assert f1["rebalances"] == 1 and f1["time_to_stable_ms"] == 400  # injected 900, stable again at 1300


def test_ownership_eager_and_cooperative():
    def ev(ts, kind, parts=None, member="a"):
        return Event(T0 + ts, member, kind, 1, None if parts is None else [("t", p) for p in parts], None, None, ts)

    events = [ev(0, "assigned", [0, 1]), ev(100, "assigned", [2]), ev(200, "revoked", [1]), ev(300, "lost", None)]
    coop = History(events=list(events), has_events=True)
    rebuild_ownership(coop, "cooperative")
    assert sorted((p.partition, p.start - T0, p.end - T0, p.end_kind) for p in coop.periods) == \
        [(0, 0, 300, "lost"), (1, 0, 200, "revoked"), (2, 100, 300, "lost")]
    eager = History(events=list(events), has_events=True)
    rebuild_ownership(eager, "eager")  # an assignment is the whole new assignment
    assert sorted((p.partition, p.start - T0, p.end - T0, p.end_kind) for p in eager.periods) == \
        [(0, 0, 100, "replaced"), (1, 0, 100, "replaced"), (2, 100, 300, "lost")]
    auto = History(events=[Event(T0, "a", "started", -1, None, None, "protocol=classic assignor=cooperative-sticky", -1)] + list(events), has_events=True)
    rebuild_ownership(auto, "auto")
    assert auto.protocols == {"a": "cooperative"} and len(auto.periods) == 3


def test_cooperative_rebalance_keeps_ownership(tmp_path, spark):
    """Cooperative: a keeps t:0 through a rebalance that moves t:1 to b; its consumption of t:0 across the
    rebalance is one ownership (no duplicate, no step back, no window without owner for t:0)."""
    r = Run(tmp_path / "run", "parquet")
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail=COOP)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=100).consume("a", "t", 1, range(0, 50), at=100)
    r.event("a", "committed", 200, offsets={"t:0": 50, "t:1": 50}, generation=1)
    r.event("a", "revoked", 1000, ["t:1"], generation=1).event("a", "assigned", 1100, [], generation=2)
    r.event("b", "assigned", 1100, ["t:1"], generation=2)
    r.consume("a", "t", 0, range(50, 100), at=1050).consume("b", "t", 1, range(50, 100), at=1200)
    s = analyze(r.write(), spark=spark)
    assert s["valid"] is True and s["duplicated_offsets"] == 0
    windows = {w["partition"]: w["total_ms"] for w in s["rebalance_figures"]["no_owner_by_partition"]}
    assert windows == {0: 0, 1: 100}
    assert s["rebalance_figures"]["protocols"] == {"a": "cooperative", "b": "cooperative"}


def test_consumed_outside_ownership(tmp_path, spark):
    """A zombie keeps consuming after its revocation: counted, and its duplicates are over budget."""
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(20))
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("a", "revoked", 500, ["t:0"])
    r.event("b", "assigned", 600, ["t:0"], generation=2)
    r.consume("a", "t", 0, range(0, 10), at=100).consume("b", "t", 0, range(10, 20), at=700)
    r.consume("a", "t", 0, range(15, 20), at=800)  # a, no longer owner
    s = analyze(r.write(), spark=spark)
    assert s["rebalance_figures"]["consumed_outside_ownership"] == 5
    [(who, zombie)] = s["rebalance_figures"]["outside_ownership_by_member"].items()
    assert who == "a" and zombie["records"] == 5 and zombie["window_ms"] == 4  # 800..804 ms after T0
    over = of(s, "duplicate_over_budget")
    assert [(a["offsets"], a["count"]) for a in over] == [([15, 19], 5)]
    assert "did not own" in over[0]["reason"]


def test_member_without_events_makes_the_budget_unknown(tmp_path, spark):
    r = handover(tmp_path / "run", "jsonl")
    r.consume("ghost", "t", 0, [45], at=1500)  # a member with no events/ file
    s = analyze(r.write(), spark=spark)
    assert s["checks"]["duplicate_over_budget"]["status"] == "unknown"
    assert s["valid"] == "unknown"


def test_a_crashing_check_gives_unknown_not_a_stack_trace(tmp_path, spark, monkeypatch):
    import dataclasses

    import analysis.checks.framework as C

    def boom(facts):
        raise RuntimeError("simulated checker bug")

    monkeypatch.setitem(C.REGISTRY, "commit_regression", dataclasses.replace(C.REGISTRY["commit_regression"], run=boom))
    rd = handover(tmp_path / "run", "jsonl").write()
    s = analyze(rd, spark=spark)
    assert s["valid"] == "unknown"
    assert s["checks"]["commit_regression"] == {"ran": False, "status": "crashed", "error": "RuntimeError: simulated checker bug"}
    assert s["anomaly_counts"]["commit_regression"] is None
    assert s["checks"]["duplicate"]["status"] == "ran" and s["lost_records"] == 0
    assert "simulated checker bug" in (rd / "report" / "index.html").read_text()


def test_jsonl_and_parquet_give_the_same_summary(tmp_path, spark):
    """The same synthetic run written as JSONL and as Parquet: the same summary (every count, every anomaly),
    and the counts of the generator's ground truth."""
    import json

    from benchmarks.synth import Plan, generate
    got = []
    for f in ("jsonl", "parquet"):
        generate(tmp_path / f, Plan(records=30_000, fmt=f, seed=11))
        s = _strip(analyze(tmp_path / f, spark=spark))
        for k in ("run_dir", "input"):
            s.pop(k)
        got.append(s)
    assert got[0] == got[1]
    truth = json.loads((tmp_path / "parquet" / "truth.json").read_text())
    assert {k: got[1][k] for k in ("duplicated_offsets", "lost_records", "consumed_rows")} == \
        {k: truth[k] for k in ("duplicated_offsets", "lost_records", "consumed_rows")}


def test_wall_clock_stepping_back_is_not_a_step_back(tmp_path, spark, fmt):
    """The member's log order is the consumption order: timestamps that go back (an NTP step) do not make
    the offsets go back."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(100))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=500).consume("a", "t", 0, range(50, 100), at=300)
    s = analyze(r.write(), spark=spark)
    assert s["valid"] is True and s["anomaly_counts"]["backwards"] == 0 and s["anomaly_counts"]["skip"] == 0


def _strip(s):
    s = dict(s)
    s.pop("analysis_seconds")
    s.pop("spark")
    return s


def test_duplicate_write(tmp_path, spark, fmt):
    """A retry without idempotence: seq 5 was written at t:0@5 (its ack lost: logged as info, no offset)
    and again at t:0@6, which was acked. Consumers see both copies; a record with a timed-out send that
    landed once (t:0@9) is no duplicate write."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, [0, 1, 2, 3, 4])
    r.produced.append({"topic": "t", "partition": None, "offset": None, "acked_at_ms": T0 + 10, "key": "k",
                       "producer_id": "p0", "seq": 5, "status": "info"})
    r.produce("t", 0, [6, 7, 8], at=20)
    r.produced[-3]["seq"] = 5  # offset 6 carries seq 5
    r.consume("a", "t", 0, range(10), at=100)
    r.consumed["a"][5]["seq"] = 5
    r.consumed["a"][6]["seq"] = 5
    s = analyze(r.write(), spark=spark)
    dw = of(s, "duplicate_write")
    assert [(a["producer_id"], a["seq"], a["copies"]) for a in dw] == [("p0", 5, ["t:0@5", "t:0@6"])]
    assert s["anomaly_counts"]["duplicate_write"] == 1 and s["consumed_unacked"] == 2 and s["valid"] is False


def test_frozen_member_is_superseded(tmp_path, spark, fmt):
    """a is frozen (SIGSTOP) past its session time-out: the group gives t:0 to b at 1000 while a's log still
    says it owns it. When a resumes at 2000 it logs its in-flight commit (40) and consumes 50-59 from its
    buffer before it learns it lost the partition. b's re-delivery of a's uncommitted tail (40-49) is inside
    the budget; a's zombie re-consumption (50-59) is not; a's late commit is no regression."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(100))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=100)
    r.event("b", "assigned", 1000, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(40, 100), at=1100)
    r.event("b", "committed", 1500, offsets={"t:0": 100}, generation=2)
    r.event("a", "committed", 2000, offsets={"t:0": 40}, generation=1)   # sent before the freeze
    r.consume("a", "t", 0, range(50, 60), at=2001)
    r.event("a", "lost", 2100, ["t:0"], generation=1)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["commit_regression"] == 0
    assert {tuple(d["offsets"]): d["budget"] for d in of(s, "duplicate")} == {(40, 49): "within", (50, 59): "over"}
    over = of(s, "duplicate_over_budget")
    assert [(a["offsets"], a["count"]) for a in over] == [([50, 59], 10)] and "did not own" in over[0]["reason"]
    assert "superseded by b" in [d for d in of(s, "duplicate") if d["offsets"] == [40, 49]][0]["reason"]
    assert s["rebalance_figures"]["consumed_outside_ownership"] == 10


@pytest.mark.parametrize("facts, protocol", [
    ({"client": "java", "protocol": "classic", "assignor": "cooperative-sticky", "instance_id": None}, "cooperative"),
    ({"client": "librdkafka", "protocol": "classic", "assignor": "range", "instance_id": "i-1"}, "eager"),
    ({"client": "java", "protocol": "consumer", "assignor": "uniform", "instance_id": None}, "cooperative"),
    ({"detail": "protocol=classic assignor=roundrobin"}, "eager"),                 # a run directory from before
])
def test_typed_started_event(tmp_path, spark, facts, protocol):
    """Issue 8: the protocol comes from the typed fields of `started` (old run directories: from its detail).
    Eager: an `assigned` without t:1 ends a's ownership of t:1, so what a consumes of it later is outside."""
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(10)).produce("t", 1, range(10))
    r.event("a", "started", 0, **facts)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1).event("a", "assigned", 50, ["t:0"], generation=2)
    r.consume("a", "t", 0, range(10), at=100).consume("a", "t", 1, range(10), at=100)
    s = analyze(r.write(), spark=spark)
    assert s["rebalance_figures"]["protocols"] == {"a": protocol}
    assert s["rebalance_figures"]["consumed_outside_ownership"] == (10 if protocol == "eager" else 0)
