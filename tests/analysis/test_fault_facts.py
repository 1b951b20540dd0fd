"""Issue 24: a fault row declares what the analysis needs (ends_process, effect_from, label), and the analysis reads
those, never the kind. A row written before the fields existed (an older run, a user's own run directory) means what
its kind meant then."""
import json

import pytest

from analysis import analyze
from analysis.errors import InputError
from analysis.rundir.history import build
from analysis_runs import T0, Run
from test_loss_budget import crash_run, of

HEARTBEAT_ERROR = {"api": "Heartbeat", "action": "error", "error": "REBALANCE_IN_PROGRESS", "duration_s": 6}
OBSERVE = {"api": "JoinGroup", "action": "observe", "duration_s": 30}
HITS = [{"at_ms": T0 + 2_500, "member": "b", "api": "Heartbeat", "version": 4, "generation": 1}]
# id, kind, target, inject, heal (ms after T0), params, hits, and the facts the faults package writes today
FAULTS = [
    ("f1", "broker_freeze", "kafka-1", 500, 900, {}, None, {"ends_process": False, "effect_from": "inject",
                                                           "label": "broker_freeze"}),
    ("f2", "member_crash", "a", 300, 2_000, {}, None, {"ends_process": True, "effect_from": "inject",
                                                      "label": "member_crash"}),
    ("f3", "rpc", "group", 1_000, 7_000, HEARTBEAT_ERROR, HITS,
     {"ends_process": False, "effect_from": "first_hit", "label": "rpc Heartbeat error REBALANCE_IN_PROGRESS"}),
    ("f4", "rpc", "group", 0, 30_000, OBSERVE, HITS, {"ends_process": False, "effect_from": "never",
                                                    "label": "rpc JoinGroup observe"}),
    ("f5", "rpc", "b", 1_000, 7_000, {"api": "SyncGroup", "action": "delay", "delay_ms": 8_000}, None,
     {"ends_process": False, "effect_from": "first_hit", "label": "rpc SyncGroup delay 8000 ms"}),
]


def run_with_faults(root, declared: bool) -> Run:
    """The loss-budget run (a crashed at-most-once member) with one fault of each kind that had a meaning, its rows
    as written today (declared) or before the facts existed."""
    r = crash_run(root, "jsonl", crash=False)
    for fid, kind, target, at, healed, params, hits, facts in FAULTS:
        r.fault(fid, at, healed, kind=kind, target=target, params=params, **({"hits": hits} if hits else {}),
                **(facts if declared else {}))
    return r


def test_an_old_style_row_and_a_new_style_row_give_the_same_history(tmp_path):
    old = build(run_with_faults(tmp_path / "old", declared=False).write())
    new = build(run_with_faults(tmp_path / "new", declared=True).write())
    assert old.faults == new.faults and old.periods == new.periods and old.commits == new.commits
    assert {f.id: {"ends_process": f.ends_process, "effect_from": f.effect_from, "label": f.label} for f in new.faults} \
        == {fid: facts for fid, *_, facts in FAULTS}
    windows = {f.id: f.cause_window(10**15) for f in new.faults}
    assert windows == {"f1": (T0 + 500, T0 + 900), "f2": (T0 + 300, T0 + 2_000), "f3": (T0 + 2_500, T0 + 7_000),
                       "f4": None, "f5": None}


def test_old_and_new_rows_give_the_same_summary_and_report(tmp_path, spark):
    old = analyze(run_with_faults(tmp_path / "old", declared=False).write(), spark=spark)
    new = analyze(run_with_faults(tmp_path / "new", declared=True).write(), spark=spark)
    assert old["faults"] == new["faults"] and old["anomaly_counts"] == new["anomaly_counts"]
    # the rpc rules are not blamed: f3 first hit after the anomaly, f4 only observed, f5 never hit
    assert [(a["offsets"], a["members"], a["fault_ids"]) for a in of(new, "lost_within_budget")] == \
        [([50, 59], ["a"], ["f2", "f1"])]
    assert {f["id"]: f.get("hits") for f in new["faults"]} == {"f1": None, "f2": None, "f3": 1, "f4": 1, "f5": 0}
    html = (tmp_path / "new" / "report" / "index.html").read_text()
    assert "rpc Heartbeat error REBALANCE_IN_PROGRESS, 1 hit<" in html and "rpc SyncGroup delay 8000 ms, 0 hits<" in html


def test_a_kind_the_analysis_never_heard_of_that_ends_a_process_is_a_crash(tmp_path, spark):
    """The at-most-once member's crash, by a made-up kind: its budget is explained exactly as a member_crash's."""
    r = crash_run(tmp_path / "run", "jsonl", crash=False)
    r.fault("f1", 300, 2_000, kind="oom_killer", target="a", params={}, ends_process=True, effect_from="inject",
            label="OOM killer on a")
    s = analyze(r.write(), spark=spark)
    within = of(s, "lost_within_budget")
    assert [(a["offsets"], a["count"], a["members"], a["fault_ids"]) for a in within] == [([50, 59], 10, ["a"], ["f1"])]
    assert s["lost_records"] == 0 and s["valid"] is True
    assert s["faults"][0]["label"] == "OOM killer on a"
    assert "OOM killer on a<" in (tmp_path / "run" / "report" / "index.html").read_text()


def test_the_same_kind_that_does_not_end_a_process_is_no_crash(tmp_path, spark):
    r = crash_run(tmp_path / "run", "jsonl", crash=False)
    r.fault("f1", 300, 2_000, kind="oom_killer", target="a", params={}, ends_process=False)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["lost_within_budget"] == 0 and s["valid"] is False


def test_a_kind_whose_effect_starts_at_its_first_hit_is_blamed_from_there(tmp_path):
    rows = [{"id": "f1", "kind": "made_up", "target": "group", "injected_at_ms": 1_000, "healed_at_ms": 9_000,
             "params": {}, "effect_from": "first_hit", "hits": [{"at_ms": 4_000}]},
            {"id": "f2", "kind": "made_up", "target": "group", "injected_at_ms": 1_000, "healed_at_ms": 9_000,
             "params": {}, "effect_from": "first_hit"}]
    (tmp_path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [f.cause_window(10**15) for f in build(tmp_path).faults] == [(4_000, 9_000), None]


@pytest.mark.parametrize("field, value, problem", [
    ("effect_from", "later", "column 'effect_from' has \"later\" (a string), expected one of inject/first_hit/never"),
    ("ends_process", "yes", "column 'ends_process' has \"yes\" (a string), expected true or false"),
])
def test_a_bad_fact_is_one_line_naming_the_file_and_field(tmp_path, field, value, problem):
    row = {"id": "f1", "kind": "x", "target": "t", "injected_at_ms": 1, "healed_at_ms": 2, field: value}
    (tmp_path / "faults.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError) as caught:
        build(tmp_path)
    assert str(caught.value) == f"faults.jsonl:1: {problem}"
