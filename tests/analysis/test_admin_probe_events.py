"""Issue 22 (librdkafka#4605): an admin probe's events file sits beside the members' in events/. The analysis
reads it without taking the probe for a group member (no stall, no ownership, not in `members`), and a zoo
signature still matches its rows (its calls, and the death by a signal the harness logged for it)."""
from analysis import analyze
from analysis.rundir import history
from analysis.checks import signature
from analysis_runs import T0, Run

EAGER = "protocol=classic assignor=range"
PROBE = "admin-probe-1"


def with_probe(root) -> Run:
    """One member consuming t:0 to the end; beside it a probe that started, timed out once, and died by SIGABRT
    at 4 s, never assigned anything (a member like that would wait for an assignment: a stall)."""
    r = Run(root).produce("t", 0, range(20), step=100)
    r.event("a", "started", 0, detail=EAGER).event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(20), at=100, step=100)
    r.event(PROBE, "started", 0, role="admin_probe", client="librdkafka", client_version="2.16.1")
    r.event(PROBE, "admin_call", 3_000, role="admin_probe", request="DescribeGroups", error="_TIMED_OUT",
            elapsed_ms=3_000, detail="_TIMED_OUT: timed out")
    r.event(PROBE, "crashed", 3_400, role="admin_probe", signal="SIGABRT", exit_code=-6, detail="SIGABRT")
    return r


def test_the_probe_is_no_member_of_the_group(tmp_path):
    run_dir = with_probe(tmp_path / "run").write()
    h = history.build(run_dir)
    assert h.members_with_events == ["a"]
    assert [(e.member, e.kind) for e in h.beside] == [(PROBE, "started"), (PROBE, "admin_call"), (PROBE, "crashed")]
    assert {p.member for p in h.periods} == {"a"}


def test_analysis_judges_the_members_only(tmp_path, spark):
    s = analyze(with_probe(tmp_path / "run").write(), spark=spark, stall_ms=1_000)
    assert s["members"] == ["a"]
    assert s["anomaly_counts"]["stall"] == 0 and s["anomaly_counts"]["member_fatal"] == 0, s["anomalies"]
    assert s["valid"] is True and not any("unknown kind" in w for w in s["warnings"]), s["warnings"]


def test_a_signature_matches_the_probe_death_after_a_timed_out_call(tmp_path, spark):
    r = with_probe(tmp_path / "run")
    run_dir = r.write()
    analyze(run_dir, spark=spark)
    crash_after_timeout = [{"event": "crashed", "where": {"role": "admin_probe", "signal": "SIGABRT"},
                            "after": {"event": "admin_call", "where": {"error": "_TIMED_OUT"}, "within_ms": 6_000}}]
    match = signature.find(run_dir, crash_after_timeout)
    assert match.shown and match.examples[0]["ts_ms"] == T0 + 3_400
    too_late = [{**crash_after_timeout[0], "after": {**crash_after_timeout[0]["after"], "within_ms": 300}}]
    assert not signature.find(run_dir, too_late).shown  # the call timed out 400 ms before the death
