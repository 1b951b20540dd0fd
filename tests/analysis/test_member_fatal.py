"""Issue 22: the `member_fatal` check, on tiny hand-made histories: a member killed by its own client is an anomaly,
unless the scenario (analysis.expected_fatal) or a fault (its faults.jsonl row) expects that end."""
import pytest

from analysis import analyze
from analysis_runs import T0, Run

EAGER = "protocol=classic assignor=range"
FENCED = "FENCED_INSTANCE_ID: Fatal error: Broker: Static consumer fenced by other consumer with same group.instance.id"


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def group(root) -> Run:
    """a and b share t:0 and t:1; b takes over t:0 once a is gone at 5 s; every record is consumed once. A broker
    was paused from 2 s to 3 s."""
    r = Run(root).produce("t", 0, range(20), step=100).produce("t", 1, range(20), step=100).fault("pause-1", 2_000, 3_000)
    r.event("a", "started", 0, detail=EAGER).event("b", "started", 0, detail=EAGER)
    r.event("a", "assigned", 10, ["t:0"], generation=3).event("b", "assigned", 10, ["t:1"], generation=3)
    r.consume("a", "t", 0, range(10), at=100, step=100).consume("b", "t", 1, range(20), at=100, step=100)
    r.event("b", "assigned", 6_000, ["t:0", "t:1"], generation=4).consume("b", "t", 0, range(10, 20), at=6_100, step=10)
    return r


def test_a_member_fenced_by_its_client_is_an_anomaly(tmp_path, spark):
    r = group(tmp_path / "run")
    r.event("a", "fenced", 5_000, generation=3, detail=FENCED, error="FENCED_INSTANCE_ID", fatal=True, request="OffsetCommit")
    s = analyze(r.write(), spark=spark, grace_ms=1_000)
    [a] = of(s, "member_fatal")
    assert {k: a[k] for k in ("members", "generations", "time_ms", "error", "request", "request_from", "generation",
                              "preceding_fault", "event")} == \
        {"members": ["a"], "generations": [3], "time_ms": [T0 + 5_000, T0 + 5_000], "error": "FENCED_INSTANCE_ID",
         "request": "OffsetCommit", "request_from": "member", "generation": 3, "preceding_fault": "pause-1",
         "event": "fenced"}
    assert a["error_text"].startswith("Fatal error: Broker: Static consumer fenced")
    assert a["fault_ids"] == []  # healed at 3 s, grace 1 s: attribution is by time; the fault before it is named apart
    assert s["anomaly_counts"]["member_fatal"] == 1 and s["valid"] is False
    assert s["lost_records"] == 0 and s["anomaly_counts"]["duplicate"] == 0  # the run is otherwise clean


def test_an_expected_fatal_end_is_listed_not_reported(tmp_path, spark):
    """By the scenario (analysis.expected_fatal, or `any`), or by the fault that means to end that member."""
    r = group(tmp_path / "run")
    r.event("a", "fenced", 5_000, generation=3, detail=FENCED, error="FENCED_INSTANCE_ID", fatal=True)
    for expected in (["a"], "any"):
        s = analyze(r.write(), spark=spark, expected_fatal=expected)
        assert of(s, "member_fatal") == [] and s["valid"] is True, s["anomalies"]
        assert s["checks"]["member_fatal"]["expected"] == \
            [{"member": "a", "error": "FENCED_INSTANCE_ID", "time_ms": T0 + 5_000, "expected_by": "scenario"}]
    s = analyze(r.write(), spark=spark, expected_fatal=["b"])
    assert [a["members"] for a in of(s, "member_fatal")] == [["a"]]  # another member's end is still reported
    r.faults.append({"id": "duplicate_instance-1", "kind": "duplicate_instance", "target": "a", "injected_at_ms": T0 + 4_000,
                     "healed_at_ms": T0 + 8_000, "params": {}, "expected_fatal": ["a"]})
    s = analyze(r.write(), spark=spark)
    assert of(s, "member_fatal") == [] and s["checks"]["member_fatal"]["expected"][0]["expected_by"] == "duplicate_instance-1"



def test_a_member_dead_of_a_signal_the_harness_did_not_send_is_an_anomaly(tmp_path, spark):
    """workloads/services.py logs `crashed` with the signal (an abort inside the client); a crash the harness made
    (a member_crash fault's SIGKILL) carries no signal and stays the fault's, within its budget."""
    r = group(tmp_path / "run")
    r.event("a", "crashed", 5_000, generation=3, signal="SIGABRT", exit_code=-6)
    s = analyze(r.write(), spark=spark)
    [a] = of(s, "member_fatal")
    assert (a["members"], a["error"], a["event"]) == (["a"], "SIGABRT", "crashed") and s["valid"] is False
    r = group(tmp_path / "run2")
    r.event("a", "crashed", 5_000, generation=3)
    assert of(analyze(r.write(), spark=spark), "member_fatal") == []

def test_an_error_that_is_not_fatal_is_no_anomaly(tmp_path, spark):
    r = group(tmp_path / "run")
    r.event("a", "error", 4_000, generation=3, detail="_TRANSPORT: Broker: disconnected", error="_TRANSPORT", fatal=False)
    r.event("a", "error", 4_500, generation=3, detail="ILLEGAL_GENERATION: Broker: Specified group generation id is not valid")
    r.event("a", "stopped", 5_000, generation=3)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["member_fatal"] == 0 and s["checks"]["member_fatal"]["status"] == "ran"


def test_the_request_comes_from_the_rpc_fault_that_answered_that_error(tmp_path, spark):
    """A Java member logs no request for a fatal error drawn by poll(); the rpc fault that answered this member's
    Heartbeat with FENCED_INSTANCE_ID names it, and its hit the generation. A run written before `fatal` existed:
    `fenced` is always an end, and the error is the detail's first word."""
    r = group(tmp_path / "run")
    r.event("a", "fenced", 5_000, generation=-1, detail=FENCED)
    r.faults.append({"id": "rpc-1", "kind": "rpc", "target": "a", "injected_at_ms": T0 + 3_000, "healed_at_ms": T0 + 7_000,
                     "params": {"api": "Heartbeat", "action": "error", "error": "FENCED_INSTANCE_ID"},
                     "hits": [{"at_ms": T0 + 3_500, "member": "b", "api": "Heartbeat", "generation": 3},
                              {"at_ms": T0 + 4_900, "member": "a", "api": "Heartbeat", "generation": 3},
                              {"at_ms": T0 + 6_000, "member": "a", "api": "Heartbeat", "generation": 4}]})
    s = analyze(r.write(), spark=spark, grace_ms=1_000)
    [a] = of(s, "member_fatal")
    assert (a["error"], a["request"], a["request_from"], a["generation"], a["preceding_fault"], a["fault_ids"]) == \
        ("FENCED_INSTANCE_ID", "Heartbeat", "rpc-1", 3, "rpc-1", ["rpc-1"])


def test_a_bad_fatal_flag_names_the_file_and_column(tmp_path, spark):
    from analysis.errors import InputError
    r = group(tmp_path / "run")
    r.event("a", "fenced", 5_000, detail=FENCED, fatal="yes")
    with pytest.raises(InputError, match=r"events/a.jsonl:\d+: column 'fatal' has \"yes\" \(a string\), expected true or false"):
        analyze(r.write(), spark=spark)


def test_the_analyze_command_takes_the_expected_members(tmp_path, spark, capsys):
    from analysis.cli import main
    r = group(tmp_path / "run")
    r.event("a", "fenced", 5_000, generation=3, detail=FENCED, error="FENCED_INSTANCE_ID", fatal=True)
    run_dir = str(r.write())
    assert main(["analyze", run_dir]) == 1
    assert main(["analyze", run_dir, "--expected-fatal", "b,a"]) == 0
    assert main(["analyze", run_dir, "--expected-fatal", "b", "--expected-fatal", "any"]) == 0
    with pytest.raises(SystemExit):
        main(["analyze", run_dir, "--expected-fatal", "a,,b"])
