"""The pytest plugin as a user meets it: options, markers and usage errors through pytester (no cluster);
the assertion helpers on hand-made summaries of the documented shape (docs/DESIGN.md, report/summary.json), old and
new. tests/harness/test_assertions_on_analysed_runs.py runs them on real analysis output."""
import json

import pytest

from analysis.api import REGISTRY
from harness.plugin.assertions import ChaosAssertionError, ChaosRun

CHECKS = (*REGISTRY, "attribution", "rebalances")

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
    """A clean run's summary: every check ran and found nothing."""
    base = {"valid": True, "lost_records": 0, "duplicate_extra_deliveries": 0, "rebalances": 2,
            "anomaly_counts": dict.fromkeys(REGISTRY, 0), "anomalies": [],
            "checks": {name: {"ran": True, "status": "ran", "count": 0} for name in CHECKS} | {
                "stall": {"ran": True, "status": "ran", "count": 0, "stall_ms": 10_000}},
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
UNPLACED = {"type": "lost_unplaced", "topic": "orders", "partition": 3, "offsets": None, "count": 1, "members": [],
            "producer_id": "producer-1", "seq": 77, "fault_ids": []}
OVER = {"type": "duplicate_over_budget", "topic": "orders", "partition": 0, "offsets": [5, 5], "count": 1,
        "members": ["member-1", "member-2"], "reason": "inside one ownership", "fault_ids": []}
STALL = {"type": "stall", "topic": "orders", "partition": 1, "offsets": [40, 40], "count": 1, "members": ["member-2"],
         "fault_ids": ["member_freeze-1"]}
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
    ({"anomaly_counts": {"lost_unplaced": 1}, "anomalies": [UNPLACED]}, lambda r: r.assert_no_loss(),
     ["1 acknowledged record(s) were never consumed", "lost_unplaced: orders-3, producer-1 seq 77"]),
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
    ({"anomaly_counts": {"stall": 2}, "anomalies": [STALL]}, lambda r: r.assert_no_stall(),
     ["2 stall(s) longer than 10000 ms", "stall: orders-1 offset 40, members member-2, during member_freeze-1"]),
    ({"valid": False, "anomaly_counts": {"lost": 3, "skip": 0, "stall": None}, "anomalies": [LOST]},
     lambda r: r.assert_valid(), ["the run is invalid: anomalies {'lost': 3}", "lost: orders-2 offsets 10-12"]),
    ({"valid": "unknown", "checks": {"lost": {"status": "crashed", "error": "boom"}, "stall": {"status": "ran"}}},
     lambda r: r.assert_valid(), ["the run is undecided: anomalies none; checks not decided: lost crashed (boom)"]),
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


# A check that gave no verdict, in the shape summaries have now (not_run, a null count) and had before (skipped, 0).
NOT_DECIDED = {
    "not_run": ({"ran": False, "status": "not_run", "reason": "no events"}, None, "did not run (no events)"),
    "skipped (old)": ({"status": "skipped", "reason": "no events"}, 0, "did not run (no events)"),
    "crashed": ({"ran": False, "status": "crashed", "error": "Py4JError: gone"}, None, "crashed (Py4JError: gone)"),
    "crashed (old)": ({"status": "crashed", "error": "Py4JError: gone"}, 0, "crashed (Py4JError: gone)"),
    "unknown": ({"ran": True, "status": "unknown", "count": 0}, 0, "ran but could not decide"),
}
HELPERS = {
    "lost": lambda r: r.assert_no_loss(),
    "duplicate_over_budget": lambda r: r.assert_duplicates_within_budget(),
    "stall": lambda r: r.assert_no_stall(),
    "rebalances": lambda r: (r.assert_rebalances(at_most=5), r.assert_no_revocation("member-2"),
                             r.assert_time_to_stable(below_s=60)),
    "skip": lambda r: r.assert_valid(),
}


@pytest.mark.parametrize("shape", NOT_DECIDED)
@pytest.mark.parametrize("check", HELPERS)
def test_a_check_that_gave_no_verdict_is_could_not_verify_never_a_pass(tmp_path, check, shape):
    state, count, why = NOT_DECIDED[shape]
    clean = summary(faults=[FAULT])
    HELPERS[check](run_of(tmp_path, **clean))  # the same run with the check decided passes
    undecided = {**clean, "checks": {**clean["checks"], check: state},
                 "anomaly_counts": {**clean["anomaly_counts"], check: count}}
    if check == "lost":
        undecided["lost_records"] = count
    with pytest.raises(ChaosAssertionError) as failed:
        HELPERS[check](run_of(tmp_path, **undecided))
    said = f"could not verify that the run is valid: checks not decided: skip {why}" if check == "skip" \
        else f"could not verify: the {check} check {why}"
    assert said in str(failed.value)


def test_a_check_missing_from_the_summary_is_could_not_verify(tmp_path):
    clean = summary()
    without = {name: state for name, state in clean["checks"].items() if name != "lost"}
    with pytest.raises(ChaosAssertionError, match="could not verify: the lost check is not in the summary"):
        run_of(tmp_path, checks=without).assert_no_loss()


def rpc_fault(fid, api, action, target, hits=()):
    return {"id": fid, "kind": "rpc", "target": target, "injected_at_ms": 0, "healed_at_ms": 9,
            "params": {"api": api, "action": action}, "hits": [{"at_ms": at, "member": m, "api": api, "version": 4,
                                                                 "member_id": f"{m}-id", "generation": 3} for at, m in hits]}


def run_with_faults(tmp_path, *rows) -> ChaosRun:
    (tmp_path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_of(tmp_path)


def test_rpc_hits_are_each_requested_fault_s_hits_oldest_first(tmp_path):
    run = run_with_faults(tmp_path,
                          rpc_fault("rpc-1", "Heartbeat", "observe", "group", [(30, "member-1"), (10, "member-2")]),
                          rpc_fault("rpc-2", "Heartbeat", "error", "member-2", [(20, "member-2")]),
                          rpc_fault("rpc-3", "JoinGroup", "observe", "group"),
                          {"id": "broker_freeze-4", "kind": "broker_freeze", "target": "kafka-1", "params": {}})
    assert [(h["at_ms"], h["fault_id"], h["action"]) for h in run.rpc_hits("Heartbeat")] == \
        [(10, "rpc-1", "observe"), (20, "rpc-2", "error"), (30, "rpc-1", "observe")]
    (single,) = run.rpc_hits("Heartbeat", "error", target="member-2")
    assert single == {"at_ms": 20, "member": "member-2", "api": "Heartbeat", "version": 4, "member_id": "member-2-id",
                      "generation": 3, "fault_id": "rpc-2", "action": "error"}
    assert [h["at_ms"] for h in run.rpc_hits(action="observe")] == [10, 30]
    assert run.rpc_hits("JoinGroup") == []  # a rule that was never hit: a finding, not a mistake


@pytest.mark.parametrize("asked, said", [
    (dict(api="Heartbeat", action="error", target="member-3"),
     "no rpc fault Heartbeat error on member-3 in this run (rpc faults: rpc-1 (Heartbeat error on member-2))"),
    (dict(api="SyncGroup"), "no rpc fault SyncGroup in this run"),
])
def test_rpc_hits_of_a_fault_the_run_does_not_have_fail_saying_which_it_has(tmp_path, asked, said):
    run = run_with_faults(tmp_path, rpc_fault("rpc-1", "Heartbeat", "error", "member-2", [(20, "member-2")]))
    with pytest.raises(ChaosAssertionError) as failed:
        run.rpc_hits(**asked)
    assert said in str(failed.value)


def test_rpc_hits_of_a_run_without_faults_jsonl_fail(tmp_path):
    with pytest.raises(ChaosAssertionError, match="the run has no faults.jsonl"):
        run_of(tmp_path).rpc_hits("Heartbeat")


def test_a_run_directory_loads_with_its_summary_and_run_json(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "summary.json").write_text(json.dumps(summary(lost_records=3, anomalies=[LOST])))
    (tmp_path / "run.json").write_text(json.dumps({"phases_s": {"produce": 4.5}, "drained": False, "errors": ["x"],
                                                   "skipped_faults": [{"kind": "broker_freeze"}]}))
    run = ChaosRun.load(tmp_path)
    assert (run.phases, run.drained, run.errors, run.skipped_faults) == ({"produce": 4.5}, False, ["x"], [{"kind": "broker_freeze"}])
    with pytest.raises(ChaosAssertionError, match="3 acknowledged record"):
        run.assert_no_loss()


def test_assert_settled_names_what_did_not_settle_from_run_json(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"drained": True, "unsettled": []}))
    ChaosRun.load(tmp_path).assert_settled()
    line = "the group did not become stable within 61 s (last seen: PREPARING_REBALANCE, 2 of 3 members, ...)"
    (tmp_path / "run.json").write_text(json.dumps({"drained": False, "unsettled": [line]}))
    with pytest.raises(ChaosAssertionError, match=r"the group did not settle: the group did not become stable within 61 s"):
        ChaosRun.load(tmp_path).assert_settled()


def test_a_run_directory_never_analysed_loads_and_says_so(tmp_path):
    run = ChaosRun.load(tmp_path)
    assert run.summary is None and run.drained
    with pytest.raises(ChaosAssertionError, match="not analysed: no report/summary.json"):
        run.assert_valid()


def test_an_unreadable_summary_is_one_error_naming_the_file(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "summary.json").write_text('{"valid": tr')
    with pytest.raises(ChaosAssertionError, match=r"report/summary.json: unreadable"):
        ChaosRun.load(tmp_path)
