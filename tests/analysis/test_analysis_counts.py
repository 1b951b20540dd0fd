"""Issue 2, item 5/8: exact counts on small hand-made runs, in both formats, and the report files."""
import json

from analysis import analyze
from analysis.checks import checks_needing
from analysis_runs import Run, clean_run, known_run, oracle

KEYS = ("produced_records", "consumed_rows", "duplicated_offsets", "duplicate_extra_deliveries", "lost_records")


def test_counts_are_exact(tmp_path, spark, fmt):
    r = known_run(tmp_path / "run", fmt)
    s = analyze(r.write(), spark=spark)
    got = {k: s[k] for k in KEYS}
    assert got == {"produced_records": 41, "consumed_rows": 49, "duplicated_offsets": 8,
                   "duplicate_extra_deliveries": 10, "lost_records": 3}
    assert got == oracle(r)
    assert s["produced_by_status"] == {"ok": 41, "fail": 1, "info": 2, "unplaced": 0}
    assert s["consumed_unacked"] == 1
    assert s["consumed_distinct"] == 39
    assert s["anomaly_counts"]["duplicate"] == 8 and s["anomaly_counts"]["lost"] == 3
    lost = sorted((a["partition"], tuple(a["offsets"]), a["count"]) for a in s["anomalies"] if a["type"] == "lost")
    assert lost == [(0, (7, 8), 2), (1, (64, 64), 1)]
    dups = {(a["partition"], o) for a in s["anomalies"] if a["type"] == "duplicate"
            for o in range(a["offsets"][0], a["offsets"][1] + 1)}
    assert dups == {(0, 15), (0, 16), (0, 17), (0, 18), (0, 19), (1, 3), (1, 63), (1, 65)}
    triple = next(a for a in s["anomalies"] if a["type"] == "duplicate" and a["partition"] == 0 and a["offsets"] == [19, 19])
    assert triple["members"] == ["m1", "m2"] and triple["extra_deliveries"] == 2
    assert s["valid"] is False  # records were lost


def test_only_produced_and_consumed(tmp_path, spark, fmt):
    """No events/, no faults.jsonl: the counts still come out, the checks that need them say why they skipped."""
    r = known_run(tmp_path / "run", fmt)
    rd = r.write(events=False, faults=False)
    s = analyze(rd, spark=spark)
    assert {k: s[k] for k in KEYS} == oracle(r)
    for name in ("skip", "backwards", "commit_regression", "duplicate_over_budget", "rebalances"):
        assert s["checks"][name] == {"ran": False, "status": "not_run", "reason": "no events"}, name
    for name in ("unhealed_fault", "attribution"):
        assert s["checks"][name] == {"ran": False, "status": "not_run", "reason": "no faults.jsonl"}, name
    for name in ("skip", "backwards", "commit_regression", "duplicate_over_budget", "unhealed_fault"):
        assert s["anomaly_counts"][name] is None, f"{name} did not run: its count is unknown, not 0"
    assert s["anomaly_counts"]["lost"] == 3 and s["anomaly_counts"]["duplicate"] == 8
    rows = [json.loads(line) for line in (rd / "report" / "anomalies.jsonl").read_text().splitlines()]
    assert len(rows) == sum(n for n in s["anomaly_ranges"].values())
    assert s["rebalances"] is None and s["faults"] == []
    html = (rd / "report" / "index.html").read_text()
    assert "skipped: no events" in html


def test_clean_run_has_no_anomaly(tmp_path, spark, fmt):
    rd = clean_run(tmp_path / "run", fmt).write()
    s = analyze(rd, spark=spark)
    assert s["valid"] is True
    assert s["anomalies"] == []
    # every check that ran found nothing; the state checks did not run (no state/), nor the exactly-once ones (none
    # promised): their counts are unknown, not 0
    state = {t for t in s["anomaly_counts"] if t.startswith("state_")}
    assert state == {"state_duplicate", "state_duplicate_within_budget", "state_lost"}
    unpromised = checks_needing("eos", "verified")
    assert {"eos_duplicate", "eos_lost", "aborted_read", "poll_skip"} <= unpromised <= set(s["anomaly_counts"])
    assert all(n == 0 for t, n in s["anomaly_counts"].items() if t not in state | unpromised), s["anomaly_counts"]
    assert all(s["anomaly_counts"][t] is None and s["checks"][t]["reason"] == "no state/" for t in state)
    assert all(s["anomaly_counts"][t] is None and "no exactly-once promised" in s["checks"][t]["reason"]
               for t in unpromised)
    assert {k: s[k] for k in KEYS} == {"produced_records": 200, "consumed_rows": 200, "duplicated_offsets": 0,
                                       "duplicate_extra_deliveries": 0, "lost_records": 0}
    ran = {k for k, v in s["checks"].items() if v["status"] == "ran"}
    assert ran == {"duplicate", "lost", "lost_within_budget", "unseen", "skip", "backwards", "commit_regression", "commit_ahead",
                   "duplicate_over_budget",
                   "unhealed_fault", "attribution", "rebalances", "duplicate_write", "lost_unplaced", "stall", "split_ownership",
                   "member_fatal",
                   "unsettled", "unapplied_assignment"}
    assert s["rebalances"] == 1
    assert s["faults"][0]["id"] == "pause-1" and s["faults"][0]["anomalies"] == {}


def test_report_files(tmp_path, spark):
    rd = known_run(tmp_path / "run", "jsonl").write()
    s = analyze(rd, spark=spark)
    on_disk = json.loads((rd / "report" / "summary.json").read_text())
    for key in ("produced_records", "consumed_rows", "duplicated_offsets", "duplicate_extra_deliveries", "lost_records",
                "anomalies", "rebalances", "faults", "valid", "checks", "run_dir", "analysis_seconds", "anomaly_counts"):
        assert key in on_disk, key
    assert on_disk["lost_records"] == s["lost_records"] == 3
    assert on_disk["run_dir"] == str(rd.resolve())
    html = (rd / "report" / "index.html").read_text()
    assert "INVALID" in html and 'id=anomalies' in html and "http://" not in html and "https://" not in html


def test_mixed_formats_and_extra_columns(tmp_path, spark):
    """Parquet and JSONL side by side in one folder; columns outside the contract are ignored."""
    r = known_run(tmp_path / "run", "parquet")
    rd = r.write()
    extra = Run(tmp_path / "x", "jsonl")
    extra.consume("m3", "orders", 0, [7], at=5000)  # finds one of the two lost records
    rows = [dict(row, note="extra column", nested={"a": 1}) for row in extra.consumed["m3"]]
    with open(rd / "consumed" / "m3.jsonl", "w") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    s = analyze(rd, spark=spark)
    assert s["lost_records"] == 2 and s["consumed_rows"] == 50
    assert s["input"]["formats"] == ["jsonl", "parquet"]
    assert s["input"]["bytes"] == sum(p.stat().st_size for sub in ("produced", "consumed") for p in (rd / sub).iterdir())


def test_truncated_last_line_is_tolerated(tmp_path, spark):
    """A killed member can leave half a line at the end of its log: ignored, with a warning."""
    r = known_run(tmp_path / "run", "jsonl")
    rd = r.write()
    with open(rd / "consumed" / "m1.jsonl", "a") as fh:
        fh.write('{"topic":"orders","partition":0,"off')
    s = analyze(rd, spark=spark)
    assert {k: s[k] for k in KEYS} == oracle(r)
    assert any("m1.jsonl:26: last line is truncated" in w for w in s["warnings"]), s["warnings"]


def test_synthetic_run_matches_its_ground_truth(tmp_path, spark, fmt):
    """benchmarks/synth.py: eager rebalances, commit tails, planted anomalies; its truth comes from numpy."""
    from benchmarks.synth import Plan, generate
    truth = generate(tmp_path / "run", Plan(records=20_000, fmt=fmt, seed=3))
    s = analyze(tmp_path / "run", spark=spark)
    for key in KEYS:
        assert s[key] == getattr(truth, key), key
    for key in ("skip", "backwards", "duplicate_over_budget", "commit_regression", "unhealed_fault"):
        assert s["anomaly_counts"][key] == getattr(truth, key), key
    assert s["rebalances"] == truth.rebalances


def test_members_that_consumed_nothing(tmp_path, spark, fmt):
    """Empty logs are valid input: everything acked is lost, nothing crashes."""
    r = Run(tmp_path / "run", fmt)
    r.produce("t", 0, range(10))
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    rd = r.write()
    if fmt == "jsonl":
        (rd / "consumed" / "a.jsonl").write_text("")
    else:
        from analysis_runs import CONSUMED_TYPES, write_table
        write_table(rd / "consumed" / "a.parquet", [], CONSUMED_TYPES, "parquet")
    s = analyze(rd, spark=spark)
    assert (s["produced_records"], s["consumed_rows"], s["lost_records"], s["duplicated_offsets"]) == (10, 0, 0, 0)
    assert s["unseen_records"] == 10  # nothing read that far: still in Kafka, not lost (issue 37)
    assert s["checks"]["unseen"]["lag"] == [{"topic": "t", "partition": 0, "unseen": 10, "read_up_to": None}]
    assert s["valid"] is True and all(c["status"] != "crashed" for c in s["checks"].values()), s["checks"]


def test_a_broken_report_page_keeps_the_verdict(tmp_path, spark, monkeypatch):
    import analysis.pages.report as report

    def boom(*args):
        raise ValueError("simulated rendering bug")

    monkeypatch.setattr(report, "render", boom)
    rd = known_run(tmp_path / "run", "jsonl").write()
    s = analyze(rd, spark=spark)
    assert s["valid"] is False and s["lost_records"] == 3
    assert json.loads((rd / "report" / "summary.json").read_text())["lost_records"] == 3
    assert "simulated rendering bug" in (rd / "report" / "index.html").read_text()
