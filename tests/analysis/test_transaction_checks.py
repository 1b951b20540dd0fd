"""Issue 56: a transactional member's abort and rewind (workloads/transactions.py) as the analysis reads it. member a
consumes t:0 0-9 in one transaction and commits it (offsets 10), consumes 10-19, aborts that transaction
(`commit_failed`, `aborted: true`) and rewinds to 10 (`rewound`), then consumes 10-19 again and commits 20. The
rewind ends a's ownership and opens the next: 10-19 come twice, within the budget (at a's last commit), and nothing
goes backwards. A real Spark."""
import json

from analysis import analyze
from analysis_runs import T0, Run


def rewound_run(root, rewound: bool = True):
    r = Run(root).produce("t", 0, range(20))
    r.event("a", "started", 0, detail="protocol=classic assignor=range commit=transaction", commit="transaction")
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(10), at=100, generation=1)
    r.event("a", "commit_sent", 200, offsets={"t:0": 10}, generation=1, commit_id=0)
    r.event("a", "committed", 210, offsets={"t:0": 10}, generation=1, commit_id=0, requested_at_ms=r_t(200))
    r.consume("a", "t", 0, range(10, 20), at=300, generation=1)
    r.event("a", "commit_sent", 400, offsets={"t:0": 20}, generation=1, commit_id=1)
    r.event("a", "commit_failed", 410, offsets={"t:0": 20}, generation=1, commit_id=1, requested_at_ms=r_t(400),
            aborted=True, detail="aborted on purpose (transaction.abort_every)")
    if rewound:
        r.event("a", "rewound", 420, offsets={"t:0": 10}, generation=1)
    r.consume("a", "t", 0, range(10, 20), at=500, generation=1)
    r.event("a", "commit_sent", 600, offsets={"t:0": 20}, generation=1, commit_id=2)
    r.event("a", "committed", 610, offsets={"t:0": 20}, generation=1, commit_id=2, requested_at_ms=r_t(600))
    r.event("a", "stopped", 700)
    return r.write()


def r_t(at: int) -> int:
    return T0 + at


def test_an_abort_and_rewind_consumes_again_within_the_budget_and_nothing_goes_backwards(tmp_path, spark):
    s = analyze(rewound_run(tmp_path / "run"), spark=spark)
    counts = s["anomaly_counts"]
    assert counts["backwards"] == 0 and counts["duplicate_over_budget"] == 0 and counts["lost"] == 0
    assert s["duplicated_offsets"] == 10 and s["valid"] is True
    assert {a["reason"] for a in s["anomalies"] if a["type"] == "duplicate"} == {
        "in a's uncommitted tail after it was rewound"}


def test_without_the_rewound_event_the_same_deliveries_go_backwards(tmp_path, spark):
    """What the rewound event changes: read without it, the second pass is a step back inside one ownership."""
    s = analyze(rewound_run(tmp_path / "run", rewound=False), spark=spark)
    assert s["anomaly_counts"]["backwards"] == 1 and s["anomaly_counts"]["duplicate_over_budget"] == 10
    assert s["valid"] is False


def test_an_aborted_transaction_commits_nothing(tmp_path):
    """commit_failed with aborted: true is no commit (not even an indeterminate one): a's commits are 10 and 20."""
    from analysis.rundir.history import build
    h = build(rewound_run(tmp_path / "run"))
    assert [(c.offset, c.ok, c.info) for c in h.commits] == [(10, True, False), (20, True, False)]
    assert [(p.start, p.end_kind) for p in h.periods] == [(r_t(10), "rewound"), (r_t(420), "stopped")]


def committed_output_run(root, b_from: int, commit: str = "transaction", isolation: str = "read_committed"):
    """Two transactional members in output-topic mode (consumed/ is the output read back): a consumes t:0 0-9 and
    commits 5, then crashes; b takes t:0 over and consumes from `b_from` to 19, committing 20."""
    import json
    r = Run(root).produce("t", 0, range(20))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail=f"protocol=classic assignor=range commit={commit}", commit=commit)
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(10), at=100, generation=1)
    r.event("a", "commit_sent", 150, offsets={"t:0": 5}, generation=1, commit_id=0)
    r.event("a", "committed", 160, offsets={"t:0": 5}, generation=1, commit_id=0, requested_at_ms=r_t(150))
    r.fault("crash-a", 300, 6300, kind="member_crash", target="a", params={}, ends_process=True, effect_from="inject",
            group_change="member_ends")
    r.event("b", "assigned", 11_000, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(b_from, 20), at=11_100, generation=2)
    r.event("b", "commit_sent", 11_200, offsets={"t:0": 20}, generation=2, commit_id=0)
    r.event("b", "committed", 11_210, offsets={"t:0": 20}, generation=2, commit_id=0, requested_at_ms=r_t(11_200))
    r.event("b", "stopped", 12_000)
    rd = r.write()
    (rd / "output.json").write_text(json.dumps({"topic": "g-txn-out", "source": "headers", "isolation": isolation,
                                                "rows": 30, "unread": 0, "commits": {"t:0": 20}}))
    return rd


def test_a_record_twice_in_the_committed_output_is_an_eos_duplicate_though_within_the_budget(tmp_path, spark):
    """b's 5-9 repeat a's uncommitted tail: at least once allows it (duplicate within the budget), exactly once
    does not (5 eos_duplicate, the run invalid), each blamed on the crash."""
    s = analyze(committed_output_run(tmp_path / "run", b_from=5), spark=spark)
    assert s["anomaly_counts"]["duplicate_over_budget"] == 0 and s["duplicated_offsets"] == 5
    [eos] = [a for a in s["anomalies"] if a["type"] == "eos_duplicate"]
    assert (eos["offsets"], eos["count"], eos["members"], eos["fault_ids"]) == ([5, 9], 5, ["a", "b"], ["crash-a"])
    assert s["anomaly_counts"]["eos_duplicate"] == 5 and s["valid"] is False


def test_the_committed_output_once_each_is_no_eos_duplicate(tmp_path, spark):
    """a's transaction of 5-9 was never committed (a crashed first): read_committed, only b's copy is there."""
    rd = committed_output_run(tmp_path / "run", b_from=5)
    import json
    path = rd / "consumed" / "a.jsonl"
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines() if json.loads(line)["offset"] < 5))
    s = analyze(rd, spark=spark)
    assert s["anomaly_counts"]["eos_duplicate"] == 0 and s["lost_records"] == 0 and s["valid"] is True


def test_eos_duplicate_runs_only_where_exactly_once_is_promised(tmp_path, spark):
    for name, commit, isolation in (("sync", "sync", "read_committed"), ("uncommitted", "transaction", "read_uncommitted")):
        s = analyze(committed_output_run(tmp_path / name, b_from=5, commit=commit, isolation=isolation), spark=spark)
        check = s["checks"]["eos_duplicate"]
        assert check["ran"] is False and "no exactly-once promised" in check["reason"], (name, check)
        assert s["anomaly_counts"]["eos_duplicate"] is None


def test_an_input_record_committed_past_with_no_committed_output_is_eos_lost(tmp_path, spark):
    """b starts at 12: 10-11 are in no committed output, though b's transaction committed 20: 2 eos_lost, named with
    the transaction that committed past them; the read checks run on the planted readers and find nothing."""
    from test_eos_reads import HEALTHY, plant, transaction_rows
    rd = committed_output_run(tmp_path / "run", b_from=12)
    plant(rd, HEALTHY, rows=transaction_rows())
    (rd / "transactions" / "b.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in transaction_rows("b", {1: ([20 + i for i in range(8)], "commit", 11_300)}, 12)))
    s = analyze(rd, spark=spark)
    [lost] = [a for a in s["anomalies"] if a["type"] == "eos_lost"]
    assert (lost["offsets"], lost["count"], lost["transaction"], lost["committed_by"]) == ([10, 11], 2, "b#1.1", "b")
    assert s["valid"] is False
    for name in ("aborted_read", "precommitted_read", "torn_transaction", "nonmonotonic_poll", "poll_skip",
                 "inconsistent_offsets"):
        assert s["checks"][name]["ran"] is True and s["anomaly_counts"][name] == 0, name
    assert s["transactions"]["by_outcome"] == {"committed": 4, "aborted": 1}  # a's 3 and b's 1; a's abort
    report = (rd / "report" / "index.html").read_text()
    assert "id=transactions" in report and "4 committed" in report


def test_inputs_written_behind_a_transaction_left_open_are_unseen_not_lost(tmp_path, spark):
    """As above, but b wrote 10-19 at output offsets 20-29, and the read_committed reader (and the read-back) stopped
    at 20 of 30, behind a transaction left open: 10-11 are unseen (held_open), not lost nor eos_lost, and the
    stall on the stable offset names b's transaction."""
    from test_eos_reads import HEALTHY, plant, transaction_rows
    rd = committed_output_run(tmp_path / "run", b_from=12)
    plant(rd, HEALTHY, rows=transaction_rows())
    (rd / "transactions" / "b.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in transaction_rows("b", {1: ([20 + i for i in range(10)], "commit", 11_300)}, 10)))
    (rd / "verified" / "readers.json").write_text(json.dumps({"read_committed": {
        "reached_end": False, "finished_at_ms": 40_000, "partitions": {"0": {"position": 20, "end": 30}}}}))
    s = analyze(rd, spark=spark)
    assert s["anomaly_counts"]["eos_lost"] == 0 and s["anomaly_counts"]["lost"] == 0
    [held] = [a for a in s["anomalies"] if a["type"] == "unseen"]
    assert (held["offsets"], held["count"], held["held_open"]) == ([10, 11], 2, True)
    [stall] = [a for a in s["anomalies"] if a.get("waiting_for") == "stable_offset"]
    assert (stall["transaction"], stall["offsets"], stall["records_held"]) == ("b#1.1", [20, 20], 10)


def test_the_read_checks_need_a_verified_reader(tmp_path, spark):
    s = analyze(committed_output_run(tmp_path / "run", b_from=10), spark=spark)
    check = s["checks"]["poll_skip"]
    assert check["ran"] is False and "no verified/ reader" in check["reason"]
    assert s["anomaly_counts"]["eos_lost"] == 0
