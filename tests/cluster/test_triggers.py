"""Group triggers on a real group: joins, leaves, slow processing, added partitions, a duplicated instance id."""
import pytest

from run_logs import rows

pytestmark = pytest.mark.cluster


def trigger_row(outcome, kind):
    [row] = [f for f in rows(outcome.run_dir, "faults") if f["kind"] == kind]
    return row


def events(outcome, kind=None):
    return [e for e in rows(outcome.run_dir / "events") if kind is None or e["kind"] == kind]


def owned_before(outcome, member, at_ms):
    owned: set[str] = set()
    for e in sorted(events(outcome), key=lambda e: e["ts_ms"]):
        if e["member"] != member or e["ts_ms"] >= at_ms:
            continue
        if e["kind"] == "assigned":  # eager revokes everything first, cooperative assigns increments
            owned |= set(e["partitions"])
        elif e["kind"] in ("revoked", "lost"):
            owned -= set(e["partitions"])
    return owned


def test_a_member_joining_an_eager_group_revokes_everything_from_every_old_member(chaos_run):
    outcome = chaos_run({"producer": {"records": 40_000, "rate": 2000}, "consumer_group": {"assignor": "range"},
                         "faults": [{"kind": "member_join", "target": "group", "at_s": 5, "duration_s": 1}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    joined_at = trigger_row(outcome, "member_join")["injected_at_ms"]
    assert trigger_row(outcome, "member_join")["members"] == ["member-4"]
    assert any(e["member"] == "member-4" for e in events(outcome, "assigned")), "the new member got nothing"
    for member in ("member-1", "member-2", "member-3"):
        before = owned_before(outcome, member, joined_at)
        revoked = {p for e in events(outcome, "revoked") if e["member"] == member and e["ts_ms"] > joined_at
                   for p in e["partitions"]}
        assert before and before <= revoked, (member, before, revoked)  # eager: stop the world
    assert outcome.summary["lost_records"] == 0


@pytest.mark.parametrize("static", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_graceful_leave(chaos_run, static):
    """Dynamic: LeaveGroup, the others rebalance at once. Static: no LeaveGroup, nothing moves until the
    10 s session has expired."""
    outcome = chaos_run({"producer": {"records": 50_000, "rate": 2000},
                         "consumer_group": {"static_membership": static, "session_timeout_ms": 10_000},
                         "faults": [{"kind": "member_leave", "target": "member-3", "at_s": 4, "duration_s": 1}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    left_at = trigger_row(outcome, "member_leave")["injected_at_ms"]
    reassigned = [e["ts_ms"] - left_at for e in events(outcome, "assigned")
                  if e["member"] != "member-3" and e["ts_ms"] > left_at]
    assert reassigned, "the others never took member-3's partitions"
    if static:
        assert min(reassigned) >= 9_000, f"a static member's leave rebalanced after {min(reassigned)} ms"
    else:
        assert min(reassigned) < 5_000, f"a dynamic member's leave took {min(reassigned)} ms to rebalance"
    assert outcome.summary["lost_records"] == 0


@pytest.mark.slow
def test_slow_processing_past_max_poll_interval_removes_the_member(chaos_run):
    outcome = chaos_run({"producer": {"records": 40_000, "rate": 2000},
                         "consumer_group": {"max_poll_interval_ms": 8000, "session_timeout_ms": 6000},
                         "faults": [{"kind": "slow_processing", "target": "member-1", "per_batch_ms": 12000,
                                     "at_s": 4, "duration_s": 10}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    slow_from = trigger_row(outcome, "slow_processing")["injected_at_ms"]
    failed = [e for e in events(outcome, "commit_failed") if e["member"] == "member-1" and e["ts_ms"] > slow_from]
    assert failed, "the slow member's late commit did not fail"
    assert any(e["member"] != "member-1" and e["ts_ms"] > slow_from for e in events(outcome, "assigned")), \
        "member-1's partitions never moved"
    summary = outcome.summary
    assert summary["lost_records"] == 0
    assert not [a for a in summary["anomalies"] if a["type"] == "duplicate_over_budget"], summary["anomalies"][:3]


@pytest.mark.slow
def test_added_partitions_are_assigned_and_consumed(chaos_run):
    # both clients notice new partitions on their next metadata refresh (5 minutes by default)
    outcome = chaos_run({"producer": {"records": 40_000, "rate": 2000},
                         "consumer_group": {"config": {"topic.metadata.refresh.interval.ms": 2000}},
                         "faults": [{"kind": "partitions_add", "target": "topic", "partitions": 9, "at_s": 4, "duration_s": 1}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    consumed_partitions = {r["partition"] for r in rows(outcome.run_dir / "consumed")}
    assert {6, 7, 8} <= consumed_partitions
    assert outcome.summary["lost_records"] == 0
