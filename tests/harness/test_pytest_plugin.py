"""The pytest plugin as a user meets it: options, markers and usage errors through pytester (no cluster);
the assertion helpers on hand-made summaries."""
import pytest

from harness.assertions import ChaosAssertionError, ChaosRun

OPTIONS = ("--kafka-backend", "--bootstrap-servers", "--toxiproxy-url", "--allow-destructive", "--kafka-version",
           "--keep-runs")


def test_options_and_markers_are_registered(pytester):
    helped = pytester.runpytest("--help").stdout.str()
    assert all(option in helped for option in OPTIONS)
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.chaos:" in markers and "@pytest.mark.slow:" in markers


@pytest.mark.parametrize("args, named", [
    (["--kafka-backend", "external"], "--bootstrap-servers"),
    (["--bootstrap-servers", "127.0.0.1:9092"], "--bootstrap-servers goes with --kafka-backend external"),
    (["--kafka-backend", "external", "--bootstrap-servers", "b:9092", "--kafka-version", "3.9.1"], "--kafka-version"),
])
def test_an_option_that_cannot_work_is_one_usage_error(pytester, args, named):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert named in result.stderr.str()


def test_a_test_using_chaos_run_is_marked_chaos(pytester):
    pytester.makepyfile("""
        def test_uses_it(chaos_run):
            pass
        def test_does_not():
            pass
    """)
    result = pytester.runpytest("--collect-only", "-q", "-m", "chaos")
    result.stdout.fnmatch_lines(["*test_uses_it*", "*1/2 tests collected (1 deselected)*"])


def summary(**over) -> dict:
    base = {"valid": True, "lost_records": 0, "duplicate_extra_deliveries": 0, "rebalances": 2,
            "anomaly_counts": {"lost": 0, "duplicate_over_budget": 0}, "anomalies": [],
            "checks": {"lost": {"status": "ran"}, "duplicate_over_budget": {"status": "ran"}},
            "members": ["member-1", "member-2"], "faults": [],
            "rebalance_figures": {"rounds": [{"index": 1, "generation": 1, "members": ["member-1"]},
                                             {"index": 2, "generation": 2, "members": ["member-1", "member-2"]}],
                                  "revocations_while_alive": {"by_member": {"member-1": 3}}}}
    return {**base, **over}


def run_of(tmp_path, **over) -> ChaosRun:
    (tmp_path / "report").mkdir(exist_ok=True)
    (tmp_path / "report" / "index.html").write_text("<html></html>")
    return ChaosRun(tmp_path, summary(**over))


LOST = {"type": "lost", "topic": "orders", "partition": 2, "offsets": [10, 12], "count": 3, "members": [],
        "fault_ids": ["broker_freeze-1"]}
OVER = {"type": "duplicate_over_budget", "topic": "orders", "partition": 0, "offsets": [5, 5], "count": 1,
        "members": ["member-1", "member-2"], "reason": "inside one ownership", "fault_ids": []}
FAULT = {"id": "member_freeze-1", "kind": "member_freeze", "target": "member-2", "rebalances": 1, "time_to_stable_ms": 12_500}


def test_helpers_pass_on_a_clean_run(tmp_path):
    run = run_of(tmp_path, faults=[FAULT])
    run.assert_valid()
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    run.assert_rebalances(at_most=2)
    run.assert_rebalances(at_most=1, fault="member_freeze-1")
    run.assert_no_revocation(member="member-2")
    run.assert_time_to_stable(below_s=13)


@pytest.mark.parametrize("over, call, said", [
    ({"lost_records": 3, "anomalies": [LOST]}, lambda r: r.assert_no_loss(),
     ["3 acknowledged record(s) were never consumed", "lost: orders-2 offsets 10-12, during broker_freeze-1"]),
    ({"anomaly_counts": {"duplicate_over_budget": 1}, "duplicate_extra_deliveries": 7, "anomalies": [OVER]},
     lambda r: r.assert_duplicates_within_budget(),
     ["1 re-delivered record(s) over the commit budget (7 re-deliveries in all)",
      "orders-0 offset 5, members member-1, member-2 (inside one ownership)"]),
    ({}, lambda r: r.assert_rebalances(at_most=1), ["2 rebalance(s) in the run, expected at most 1", "#2 generation 2"]),
    ({"faults": [FAULT]}, lambda r: r.assert_rebalances(at_most=0, fault="member_freeze-1"), ["1 rebalance(s) after fault member_freeze-1"]),
    ({}, lambda r: r.assert_no_revocation(member="member-1"), ["member-1 had 3 partition(s) revoked while it stayed"]),
    ({}, lambda r: r.assert_no_revocation(member="member-9"), ["no member 'member-9' in this run"]),
    ({"faults": [FAULT]}, lambda r: r.assert_time_to_stable(below_s=10), ["took 12.5 s to be stable again, expected under 10 s"]),
    ({"faults": [{**FAULT, "time_to_stable_ms": None}]}, lambda r: r.assert_time_to_stable(below_s=10), ["was not stable again"]),
    ({"faults": [FAULT]}, lambda r: r.assert_time_to_stable(below_s=60, fault="f-9"), ["no fault 'f-9' in this run"]),
    ({"checks": {"lost": {"status": "crashed", "error": "boom"}}}, lambda r: r.assert_no_loss(), ["did not decide: crashed (boom)"]),
    ({"valid": "unknown", "checks": {"lost": {"status": "crashed"}}}, lambda r: r.assert_valid(), ["undecided", "lost: crashed"]),
])
def test_a_failing_helper_says_what_happened_and_where_the_report_is(tmp_path, over, call, said):
    with pytest.raises(ChaosAssertionError) as failed:
        call(run_of(tmp_path, **over))
    message = str(failed.value)
    assert all(text in message for text in said), message
    assert f"report: {tmp_path / 'report' / 'index.html'}" in message


def test_a_run_that_was_not_analysed_says_so(tmp_path):
    with pytest.raises(ChaosAssertionError, match="not analysed"):
        ChaosRun(tmp_path, None).assert_no_loss()
