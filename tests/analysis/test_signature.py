"""A bug's signature over a run's own rows (analysis/checks/signature.py): every anomaly row and event, not the capped
examples of summary.json."""
import json

import pytest

from analysis.errors import InputError
from analysis.checks.signature import find, holds, MISSING


def run_dir(tmp_path, anomalies, events):
    (tmp_path / "report").mkdir(parents=True)
    (tmp_path / "events").mkdir()
    (tmp_path / "report" / "anomalies.jsonl").write_text("".join(json.dumps(a) + "\n" for a in anomalies))
    for member in sorted({e["member"] for e in events}):
        (tmp_path / "events" / f"{member}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events if e["member"] == member))
    return tmp_path


def ev(ts, member, kind, **kw):
    return {"ts_ms": ts, "member": member, "kind": kind, **kw}


LOST_AFTER_ILLEGAL_GENERATION = {"event": "lost", "after": {"event": "commit_failed", "within_ms": 1000,
                                                            "where": {"detail": {"startswith": "ILLEGAL_GENERATION"}}}}


def test_a_lost_right_after_an_illegal_generation_commit_shows_the_signature(tmp_path):
    rd = run_dir(tmp_path, [{"type": "duplicate", "count": 5}],
                 [ev(100, "m1", "commit_failed", detail="ILLEGAL_GENERATION: Commit failed"), ev(150, "m1", "lost"),
                  ev(200, "m2", "lost")])
    m = find(rd, [LOST_AFTER_ILLEGAL_GENERATION])
    assert m.shown and m.hits == [1] and m.examples[0]["member"] == "m1"
    assert m.other == {"duplicate": 1}   # the signature names no anomaly: every one is "other"


def test_a_lost_of_another_member_or_too_late_does_not(tmp_path):
    rd = run_dir(tmp_path, [], [ev(100, "m1", "commit_failed", detail="ILLEGAL_GENERATION: x"), ev(150, "m2", "lost"),
                                ev(1200, "m1", "lost"), ev(1300, "m1", "commit_failed", detail="REBALANCE_IN_PROGRESS"),
                                ev(1301, "m1", "lost")])
    assert not find(rd, [LOST_AFTER_ILLEGAL_GENERATION]).shown


def test_never_after(tmp_path):
    pred = {"event": "error", "where": {"detail": {"contains": "INVALID_REQUEST"}}, "never_after": ["assigned"]}
    rd = run_dir(tmp_path, [], [ev(1, "m1", "error", detail="x INVALID_REQUEST y"), ev(5, "m1", "assigned")])
    assert not find(rd, [pred]).shown
    rd2 = run_dir(tmp_path / "b", [], [ev(1, "m1", "assigned"), ev(5, "m1", "error", detail="INVALID_REQUEST")])
    assert find(rd2, [pred]).shown


def test_anomaly_predicates_match_fields_and_explain_what_they_match(tmp_path):
    rows = [{"type": "stall", "waiting_for": "delivery", "topic": "topic-a-1f2e3d", "stalled_ms": 9500},
            {"type": "stall", "waiting_for": "delivery", "topic": "topic-b-1f2e3d", "stalled_ms": 20000},
            {"type": "duplicate", "count": 3}]
    rd = run_dir(tmp_path, rows, [])
    pred = {"anomaly": "stall", "where": {"waiting_for": "delivery", "topic": {"startswith": "topic-a"},
                                          "stalled_ms": {"ge": 8000}}}
    m = find(rd, [pred])
    assert m.shown and m.hits == [1] and m.other == {"stall": 1, "duplicate": 1}
    assert not find(rd, [pred, {"anomaly": "split_ownership"}]).shown   # every predicate must match


def test_every_row_counts_not_only_the_capped_examples(tmp_path):
    rows = [{"type": "stall", "stalled_ms": 100}] * 500 + [{"type": "stall", "stalled_ms": 99_000}]
    assert find(run_dir(tmp_path, rows, []), [{"anomaly": "stall", "where": {"stalled_ms": {"gt": 90_000}}}]).shown


@pytest.mark.parametrize("value, cond, ok", [
    (3, 3, True), (3, {"in": [1, 3]}, True), (3, {"gt": 3}, False), (3, {"ge": 3}, True), (None, {"lt": 5}, False),
    ("ab", {"contains": "b"}, True), (MISSING, {"present": False}, True), (None, {"present": True}, False),
    (["x:1"], {"contains": "x:1"}, True), (True, {"gt": 0}, False), (MISSING, 3, False),
])
def test_conditions(value, cond, ok):
    assert holds(value, cond) is ok


def test_an_unanalysed_run_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="analyse the run first"):
        find(tmp_path, [{"anomaly": "stall"}])


def test_a_transaction_predicate_reads_the_producers_operations(tmp_path):
    """librdkafka#5456's signature: a send_offsets that took over twice its 30 s call time-out in one attempt (no
    retry: the call ignored its time-out). A long one after a retry (the time-out honoured, then the call again) and a
    short one do not match; a run without transactions/ matches nothing."""
    rd = run_dir(tmp_path, [{"type": "stall", "count": 1}], [])
    (rd / "transactions").mkdir()
    base = {"member": "member-2", "transactional_id": "g-member-2", "txn": 4}
    rows = [{**base, "ts_ms": 1, "op": "send_offsets", "elapsed_ms": 71_000, "retries": 1},
            {**base, "ts_ms": 2, "op": "send_offsets", "elapsed_ms": 300, "retries": 0},
            {**base, "ts_ms": 3, "op": "commit", "elapsed_ms": 90_000, "retries": 0}]
    (rd / "transactions" / "member-2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    hung = [{"transaction": "send_offsets", "where": {"retries": 0, "elapsed_ms": {"gt": 60_000}}}]
    assert not find(rd, hung).shown
    rows.append({**base, "ts_ms": 4, "op": "send_offsets", "elapsed_ms": 70_500, "retries": 0})
    (rd / "transactions" / "member-2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    match = find(rd, hung)
    assert match.shown and match.examples[0]["ts_ms"] == 4 and match.other == {"stall": 1}
    (rd / "transactions" / "member-2.jsonl").unlink()
    assert not find(rd, hung).shown
