"""An rpc fault's hits decide what it is blamed for: from its first hit to its heal (plus the grace); a rule that
never hit, or one that only observed, changed nothing and is blamed for nothing."""
import json

from analysis.checks.attribution import attribute
from analysis.rundir.history import Fault, History, read_faults


def anomaly(at_ms: int) -> dict:
    return {"type": "duplicate", "time_ms": [at_ms, at_ms]}


def test_an_rpc_fault_is_blamed_from_its_first_hit():
    hit = Fault("rpc-1", "rpc", "member-1", 1_000, 9_000, {"action": "error"}, [{"at_ms": 5_000}, {"at_ms": 6_000}],
                effect_from="first_hit")
    crash = Fault("member_crash-2", "member_crash", "member-2", 1_000, 9_000)
    found = [anomaly(3_000), anomaly(5_500), anomaly(9_500)]
    attribute(found, History(faults=[hit, crash]), grace_ms=1_000)
    assert [a["fault_ids"] for a in found] == [["member_crash-2"], ["rpc-1", "member_crash-2"], ["rpc-1", "member_crash-2"]]


def test_an_rpc_rule_never_hit_or_only_observing_is_blamed_for_nothing():
    idle = Fault("rpc-1", "rpc", "group", 1_000, 9_000, {"action": "hold"}, [], effect_from="first_hit")
    watcher = Fault("rpc-2", "rpc", "group", 1_000, 9_000, {"action": "observe"}, [{"at_ms": 2_000}], effect_from="never")
    found = [anomaly(3_000)]
    attribute(found, History(faults=[idle, watcher]), grace_ms=1_000)
    assert found[0]["fault_ids"] == []


def test_hits_are_read_from_faults_jsonl_and_the_last_row_of_a_fault_wins(tmp_path):
    row = {"id": "rpc-1", "kind": "rpc", "target": "member-1", "injected_at_ms": 1, "healed_at_ms": None,
           "params": {"action": "error"}}
    lines = [row, {**row, "healed_at_ms": 9, "hits": [{"at_ms": 5, "member": "member-1", "api": "Heartbeat"}]}]
    (tmp_path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (fault,) = read_faults(tmp_path, [])
    assert fault.hits == [{"at_ms": 5, "member": "member-1", "api": "Heartbeat"}] and fault.cause_window(100) == (5, 9)
