"""Issue 54: the exact state check on planted runs, expectations by hand. Two members, one partition, three keys
(offset o's key is k<o mod 3>): a applies 0-6, commits 6 (0-5), and crashes; b takes the partition over, restores
what the changelog holds, and applies from the committed offset on. The healthy run is read in both formats (the key
comes from the produced files, JSON lines or Parquet); the anomalies in JSON lines (make test's time)."""

import json

from analysis import analyze
from analysis_runs import T0, Run

KEY = lambda off: f"k{off % 3}"  # noqa: E731
CRASH = dict(kind="member_crash", target="a", params={}, ends_process=True, effect_from="inject",
             group_change="member_ends")


def state_run(root, fmt, restored, b_offsets=range(6, 12)) -> Run:
    """`restored`: a's applications that reached the changelog (b restores them); b consumes `b_offsets`."""
    r = Run(root, fmt).produce("t", 0, range(12), step=10, key=KEY)
    r.event("a", "started", 0, detail="protocol=classic assignor=range")
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    a_table, changelog = {}, {}
    r.consume("a", "t", 0, range(7), at=200, generation=1).apply("a", "t", 0, range(7), 200, a_table, key=KEY)
    r.apply("restored", "t", 0, restored, 0, changelog, key=KEY)  # what the changelog holds: a's landed writes
    del r.state["restored"]
    r.event("a", "committed", 250, offsets={"t:0": 6}, generation=1)
    r.fault("crash-a", 300, 6300, **CRASH)
    r.event("b", "started", 0, detail="protocol=classic assignor=range")
    r.event("b", "assigned", 11_000, ["t:0"], generation=2)
    r.event("b", "restore_start", 11_010, ["t:0"], generation=2, from_offset=0, to_offset=len(restored))
    r.event("b", "restore_end", 11_050, ["t:0"], generation=2, records=len(restored), elapsed_ms=40, aborted=False)
    r.consume("b", "t", 0, b_offsets, at=11_100, generation=2).apply("b", "t", 0, b_offsets, 11_100, changelog,
                                                                      generation=2, key=KEY)
    r.event("b", "committed", 11_200, offsets={"t:0": 12}, generation=2).event("b", "stopped", 12_000)
    return r.final_state(0, changelog)


def found(s, kind):
    return [(a["key"], a["input_offset"], a["members"], a["fault_ids"]) for a in s["anomalies"] if a["type"] == kind]


def test_a_healthy_stateful_run_shows_nothing(tmp_path, spark, fmt):
    """a's write of 6 died with it; b re-applies 6 on a state restored through 5: every offset once."""
    s = analyze(state_run(tmp_path / "run", fmt, restored=range(6)).write(), spark=spark)
    assert [found(s, k) for k in ("state_duplicate", "state_lost", "state_duplicate_within_budget")] == [[], [], []]
    assert s["checks"]["state_lost"]["keys_expected"] == 3 and s["checks"]["state_lost"]["state_rows"] == 13
    report = (tmp_path / "run" / "report" / "index.html").read_text()
    assert "b restores t:0 11.0s" in report and "(6 records)" in report  # drawn on the ownership timeline


def test_the_rebuilt_states_figures_come_from_the_events_and_the_state_rows(tmp_path):
    """From the crash on: one restore (40 ms, 6 records), and b's first record of t:0 100 ms after its assignment."""
    from pathlib import Path
    from analysis.figures.state_cost import state_figures
    from analysis.rundir.history import build
    h = build(Path(state_run(tmp_path / "run", "jsonl", restored=range(6)).write()))
    assert state_figures(h, T0 + 300, T0 + 60_000) == {"restore_ms": 40, "records_replayed": 6, "restores": 1,
                                                       "first_processing_ms": 100}
    assert state_figures(h, T0 + 12_000, T0 + 60_000) == {"restore_ms": None, "records_replayed": None,
                                                          "restores": None, "first_processing_ms": None}


def test_a_partition_lost_before_its_first_record_waited_until_the_loss_not_until_a_later_assignment(tmp_path):
    """b is assigned t:0 at 11.0 s and loses it 20 ms later unprocessed, gets it back at 11.05 s and processes it from
    11.1 s: the waits are 20 ms and 50 ms, never the 100 ms from the first assignment to a record of the second."""
    from pathlib import Path
    from analysis.figures.state_cost import state_figures
    from analysis.rundir.history import build
    r = state_run(tmp_path / "run", "jsonl", restored=range(6))
    r.event("b", "lost", 11_020, ["t:0"], generation=2).event("b", "assigned", 11_050, ["t:0"], generation=3)
    h = build(Path(r.write()))
    assert state_figures(h, T0 + 10_000, T0 + 60_000)["first_processing_ms"] == 50


def test_an_update_applied_twice_outside_the_budget_is_one_state_duplicate(tmp_path, spark):
    """b re-consumes 5, which a had committed, on a state that already holds it."""
    s = analyze(state_run(tmp_path / "run", "jsonl", restored=range(6), b_offsets=range(5, 12)).write(), spark=spark)
    assert found(s, "state_duplicate") == [("k2", 5, ["a", "b"], ["crash-a"])]
    assert found(s, "state_lost") == [] and found(s, "state_duplicate_within_budget") == []
    assert s["valid"] is False


def test_a_double_apply_of_the_uncommitted_tail_is_within_the_budget(tmp_path, spark):
    """a's write of 6 reached the changelog before it crashed, uncommitted: b re-applies it, as at-least-once allows."""
    s = analyze(state_run(tmp_path / "run", "jsonl", restored=range(7)).write(), spark=spark)
    assert found(s, "state_duplicate_within_budget") == [("k0", 6, ["a", "b"], ["crash-a"])]
    assert found(s, "state_duplicate") == [] and found(s, "state_lost") == []
    assert s["anomaly_counts"]["state_duplicate_within_budget"] == 1


def test_an_update_lost_is_one_state_lost(tmp_path, spark):
    """a committed 6 though its write of 5 never reached the changelog: b builds k2 on offset 2, without 5."""
    s = analyze(state_run(tmp_path / "run", "jsonl", restored=[0, 1, 2, 3, 4]).write(), spark=spark)
    assert found(s, "state_lost") == [("k2", 5, ["a", "b"], ["crash-a"])]
    assert found(s, "state_duplicate") == [] and s["valid"] is False


def test_a_run_without_state_does_not_run_the_state_checks(tmp_path, spark):
    from analysis_runs import clean_run
    s = analyze(clean_run(tmp_path / "run", "jsonl").write(), spark=spark)
    for name in ("state_duplicate", "state_lost", "state_duplicate_within_budget"):
        assert s["checks"][name]["ran"] is False and "no state/" in str(s["checks"][name]), s["checks"][name]
        assert s["anomaly_counts"].get(name) in (None, 0)


def test_a_synthetic_stateful_run_matches_its_ground_truth(tmp_path, spark):
    """benchmarks/synth.py's stateful run (its state benchmark's input): eight eager rebalances with re-delivered
    commit tails and planted duplicates over the budget, each re-delivery applied again; every offset applied twice
    is one state_duplicate or state_duplicate_within_budget, some of each, and nothing is state_lost (a planted lost
    record was never consumed: it is `lost`, not counted again)."""
    from benchmarks.synth import Plan, generate
    truth = generate(tmp_path / "run", Plan(records=20_000, seed=3, state_keys=1_200))
    s = analyze(tmp_path / "run", spark=spark)
    counts = s["anomaly_counts"]
    assert counts["state_duplicate"] > 0 and counts["state_duplicate_within_budget"] > 0
    assert counts["state_duplicate"] + counts["state_duplicate_within_budget"] == truth.state_doubled
    assert counts["state_lost"] == 0 and counts["lost"] == truth.lost_records > 0


def streams_run(root, guarantee: str):
    """state_run's double apply as a Kafka Streams program's output-topic run shows it: a's change of 6 reached the
    changelog (b restores it) but a crashed before its output record landed, so neither a's state row of 6 nor a's
    delivery of 6 (consumed/ is read back from the output topic) is there."""
    r = state_run(root, "jsonl", restored=range(7))
    r.state["a"] = [row for row in r.state["a"] if row["offset"] != 6]
    r.consumed["a"] = [row for row in r.consumed["a"] if row["offset"] != 6]
    for started in (e for evs in r.events.values() for e in evs if e["kind"] == "started"):
        started["guarantee"] = guarantee
    rd = r.write()
    (rd / "output.json").write_text(json.dumps({"topic": "out", "source": "value", "isolation": "read_committed",
                                                "rows": 13, "unread": 0, "commits": {"t:0": 12}}))
    return rd


def test_a_change_whose_output_record_died_with_its_member_is_crossed_under_at_least_once(tmp_path, spark):
    """The walk crosses the step no row applies (k0's change 3: offset 6, built on a's change of 3) and judges b's
    re-apply of 6 by the budget rule, a's delivery of 6 being hidden: within, as at-least-once allows."""
    s = analyze(streams_run(tmp_path / "run", "at_least_once"), spark=spark)
    assert found(s, "state_duplicate_within_budget") == [("k0", 6, ["a", "b"], ["crash-a"])]
    assert found(s, "state_duplicate") == [] and found(s, "state_lost") == []
    assert s["checks"]["state_lost"]["hidden_changes"] == 1
    assert [a["hidden_changes"] for a in s["anomalies"] if a["type"] == "state_duplicate_within_budget"] == [1]


def test_under_exactly_once_a_change_without_its_output_record_is_a_broken_chain(tmp_path, spark):
    """exactly_once_v2 writes the changelog record and the output record in one transaction: one without the other
    breaks the member's contract, and the state checks say so rather than judge."""
    s = analyze(streams_run(tmp_path / "run", "exactly_once_v2"), spark=spark)
    for name in ("state_duplicate", "state_lost", "state_duplicate_within_budget"):
        assert s["checks"][name]["status"] == "crashed" and "BrokenChain" in s["checks"][name]["error"], s["checks"][name]
        assert "offset 6 as its change number 3" in s["checks"][name]["error"]
