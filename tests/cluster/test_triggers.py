"""Group triggers on a real group: joins, leaves, slow processing, added partitions, a duplicated instance id."""
import pytest

from run_logs import owned_before, rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def trigger_row(outcome, kind):
    [row] = [f for f in rows(outcome.run_dir, "faults") if f["kind"] == kind]
    return row


def events(outcome, kind=None):
    return [e for e in rows(outcome.run_dir / "events") if kind is None or e["kind"] == kind]


def a_classic_round(band: dict, joined_at: int) -> None:
    """Issue 40 and issue 51 (item 10): the state band shows the join's round as the coordinator logged it, however
    short against the 100 ms sampling: PreparingRebalance, then CompletingRebalance (again, if a member joined while
    it completed), then Stable, all from coordinator.log, in a generation above the one before the join."""
    segments = band["segments"]
    before = [s for s in segments if s["from_ms"] <= joined_at and s["state"] == "Stable"][-1]
    after = [s for s in segments if s["from_ms"] > joined_at]
    states = [(s["state"], s["source"]) for s in after]
    preparing = states.index(("PreparingRebalance", "log"))
    stable = [s for s, _ in states].index("Stable", preparing)
    round_ = states[preparing:stable + 1]
    assert round_[-2:] == [("CompletingRebalance", "log"), ("Stable", "log")], states
    assert {source for _, source in round_} == {"log"} and band["inferred"] == [], (states, band["inferred"])
    assert after[stable]["generation"] > before["generation"], (before, after[stable])


def a_kip848_round(band: dict, joined_at: int) -> None:
    """Issue 40: under KIP-848 the band shows the group epoch rising with the join, the target assignment epoch
    following it, and, once stable, no member behind it."""
    segments = band["segments"]
    before = [s for s in segments if s["from_ms"] <= joined_at and s["state"] == "Stable"][-1]
    stable = [s for s in segments if s["from_ms"] > joined_at and s["state"] == "Stable" and s["members"] == 4][0]
    assert stable["group_epoch"] > before["group_epoch"], (before, stable)
    assert stable["assignment_epoch"] == stable["group_epoch"] and stable["behind"] == 0, stable
    epochs = [s["group_epoch"] for s in segments if s.get("group_epoch") is not None and s["from_ms"] <= stable["from_ms"]]
    assert epochs == sorted(epochs), epochs


def the_coordinators_round(found: dict, joined_at: int) -> None:
    """Issue 40: coordinator.log names the join's round: its reason names the new member, it reached a generation
    with the four members, its leader is one of them, and both its phases were timed."""
    [joined] = [r for r in found["rounds"] if r["began_ms"] >= joined_at and "new member member-4 " in r["reason"]]
    done = [r for r in found["rounds"] if r["began_ms"] >= joined["began_ms"] and r["members"] == 4 and r["leader"]]
    assert done and done[0]["leader"] in {"member-1", "member-2", "member-3", "member-4"}, found["rounds"]
    assert done[0]["join_ms"] >= 0 and done[0]["sync_ms"] >= 0 and done[0]["generation"] > joined["old_generation"]


def the_coordinators_epoch(found: dict, joined_at: int) -> None:
    """Issue 40: under KIP-848 coordinator.log names the epoch the join bumped, by the member's name (the sampler's
    member ids), and the target assignment the coordinator computed for it (or for the next epoch, when another
    bump came before the computation)."""
    [joined] = [e for e in found["epochs"] if e["at_ms"] >= joined_at and e["cause"] == "member-4 joined"]
    computed = [e for e in found["epochs"] if e["epoch"] >= joined["epoch"] and e["assign_ms"] is not None]
    assert computed and computed[0]["assign_ms"] >= 0 and computed[0]["assignor"], found["epochs"]


def test_a_member_joining_an_eager_group_revokes_everything_from_every_old_member(chaos_run):
    outcome = chaos_run({"producer": {"records": 40_000, "rate": 2000}, "consumer_group": {"assignor": "range"},
                         "faults": [{"kind": "member_join", "target": "group", "at_s": 5, "duration_s": 1}],
                         "run": {"group_sample_ms": 100}})
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
    a_classic_round(outcome.summary["group_state_band"], joined_at)
    the_coordinators_round(outcome.summary["coordinator_rounds"], joined_at)


@pytest.mark.parametrize("group", [pytest.param({"assignor": "cooperative-sticky"}, marks=pytest.mark.slow),  # 30 min
                                   pytest.param({"protocol": "consumer"}, id="kip848")])
def test_a_member_joining_an_incremental_group_revokes_only_what_moves(chaos_run, group):
    """KIP-429 and KIP-848: an old member gives up only the partitions that move to the new one; what it keeps
    is never revoked. Under KIP-848 there is no JoinGroup round: each member's epoch moves on its own."""
    outcome = chaos_run({"producer": {"records": 40_000, "rate": 2000}, "consumer_group": group,
                         "faults": [{"kind": "member_join", "target": "group", "at_s": 5, "duration_s": 1}],
                         "run": {"group_sample_ms": 100}})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    joined_at = trigger_row(outcome, "member_join")["injected_at_ms"]
    (a_kip848_round if group.get("protocol") == "consumer" else a_classic_round)(outcome.summary["group_state_band"],
                                                                                  joined_at)
    (the_coordinators_epoch if group.get("protocol") == "consumer" else the_coordinators_round)(
        outcome.summary["coordinator_rounds"], joined_at)
    settled = joined_at + 12_000  # the join's rebalances are over; the members stop (revoking all) 15 s later
    new = owned_before(outcome, "member-4", settled)
    assert new, "the new member got nothing"
    moved = set()
    for member in ("member-1", "member-2", "member-3"):
        before, after = owned_before(outcome, member, joined_at), owned_before(outcome, member, settled)
        revoked = {p for e in events(outcome, "revoked") if e["member"] == member and joined_at < e["ts_ms"] < settled
                   for p in e["partitions"]}
        assert before and not revoked & after, (member, before, revoked, after)  # kept means never revoked
        moved |= revoked
    assert moved == new, (moved, new)
    if group.get("protocol") == "consumer":  # no group-wide generation: each member's own epoch moves
        epochs = {e["member"]: e["generation"] for e in events(outcome, "assigned") if joined_at < e["ts_ms"] < settled}
        assert epochs.get("member-4", -1) > 0, epochs
    assert outcome.summary["lost_records"] == 0


@pytest.mark.parametrize("static", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_graceful_leave(chaos_run, static):
    """Dynamic: LeaveGroup, the others rebalance at once. Static: no LeaveGroup, nothing moves until the
    10 s session has expired (the producer runs past it: 25 s; 12 s do for a dynamic member)."""
    outcome = chaos_run({"producer": {"records": 50_000 if static else 24_000, "rate": 2000},
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
    outcome = chaos_run(catalog("max-poll-interval-exceeded"))
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
    outcome = chaos_run(catalog("partitions-added"))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    consumed_partitions = {r["partition"] for r in rows(outcome.run_dir / "consumed")}
    assert {6, 7, 8} <= consumed_partitions
    assert outcome.summary["lost_records"] == 0


@pytest.mark.parametrize("name", ["pattern-new-topic", pytest.param("pattern-new-topic-kip848", marks=pytest.mark.slow)])
def test_a_created_topic_that_matches_the_pattern_is_assigned_and_consumed(chaos_run, name):
    """Two topics subscribed by pattern; a third that matches is created mid-run: the producer writes to all
    three in turn, and the group is assigned and consumes the new one. Classic: each member matches the
    pattern against its own metadata (refreshed every 2 s here); KIP-848: the coordinator resolves it."""
    outcome = chaos_run(catalog(name))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    created = trigger_row(outcome, "topic_create")["target"]
    produced = {r["topic"] for r in rows(outcome.run_dir / "produced")}
    consumed = {r["topic"] for r in rows(outcome.run_dir / "consumed")}
    assert created in produced and len(produced) == 3
    assert consumed == produced
    assert any(f"{created}:" in p for e in events(outcome, "assigned") for p in e["partitions"]), "never assigned"
    summary = outcome.summary
    assert summary["lost_records"] == 0 and summary["produced_records"] == 30_000
    assert not [a for a in summary["anomalies"] if a["type"] == "duplicate_over_budget"], summary["anomalies"][:3]


# make test keeps the KIP-848 case (UNRELEASED_INSTANCE_ID); the classic one (FENCED_INSTANCE_ID, 29 s) runs nightly
@pytest.mark.parametrize("protocol", [pytest.param("classic", marks=pytest.mark.slow), "consumer"])
def test_a_duplicated_instance_id_is_fenced_as_each_protocol_documents(chaos_run, protocol):
    """Classic (KIP-345): the newcomer takes the static member's place and the old process is fenced
    (FENCED_INSTANCE_ID) on its next heartbeat or commit. KIP-848: the instance id is still held by a live
    member, so the newcomer is refused (UNRELEASED_INSTANCE_ID) and the old one stays."""
    outcome = chaos_run(catalog("duplicate-instance-id" if protocol == "classic" else "duplicate-instance-id-kip848"))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    started_at = trigger_row(outcome, "duplicate_instance")["injected_at_ms"]
    ended = {e["member"]: e for e in events(outcome) if e["kind"] in ("fenced", "error") and e["ts_ms"] > started_at}
    fenced, survivor = ("member-1", "member-1-dup") if protocol == "classic" else ("member-1-dup", "member-1")
    assert fenced in ended and ended[fenced]["kind"] == "fenced", f"{fenced} was not fenced: {ended}"
    assert ("FENCED_INSTANCE_ID" if protocol == "classic" else "UNRELEASED_INSTANCE_ID") in ended[fenced]["detail"], ended
    assert survivor not in ended or ended[survivor]["kind"] != "fenced", ended
    assert outcome.summary["lost_records"] == 0


def member_3_away(chaos_run, name, kind="member_bounce"):
    """Run a scenario that takes member-3 away (a bounce, a freeze): (outcome, when it went away, when it was
    back, what it owned before)."""
    outcome = chaos_run(catalog(name))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    row = trigger_row(outcome, kind)
    down_at, back_at = row["injected_at_ms"], row["healed_at_ms"]
    return outcome, down_at, back_at, owned_before(outcome, "member-3", down_at)


@pytest.mark.parametrize("name", ["static-bounce", pytest.param("static-bounce-kip848", marks=pytest.mark.slow)])
def test_a_static_member_bounced_within_its_session_gets_its_partitions_back_without_a_rebalance(chaos_run, name):
    outcome, down_at, back_at, had = member_3_away(chaos_run, name)
    moved = [e for e in events(outcome) if e["member"] != "member-3" and e["kind"] in ("assigned", "revoked")
             and down_at < e["ts_ms"] < back_at + 5_000]
    assert had and not moved, f"the others rebalanced during a static bounce: {moved[:3]}"
    again = [e for e in events(outcome, "assigned") if e["member"] == "member-3" and e["ts_ms"] > back_at]
    assert again and set(again[0]["partitions"]) == had, f"member-3 had {had}, got back {again[:1]}"
    assert outcome.summary["lost_records"] == 0


@pytest.mark.slow  # make test's 30 minutes: a dynamic leave and a join each have their test above, the bounce family static-bounce
def test_a_dynamic_member_bounced_causes_a_rebalance_at_its_leave_and_at_its_return(chaos_run):
    outcome, down_at, back_at, had = member_3_away(chaos_run, "dynamic-bounce")
    taken = {p for e in events(outcome, "assigned") if e["member"] != "member-3" and down_at < e["ts_ms"] < back_at
             for p in e["partitions"]}
    assert had and had <= taken, f"the others did not take {had} while member-3 was down (took {taken})"
    again = [e for e in events(outcome, "assigned") if e["member"] == "member-3" and e["ts_ms"] > back_at and e["partitions"]]
    assert again, "member-3 was never assigned partitions after its restart"
    assert outcome.summary["lost_records"] == 0


@pytest.mark.parametrize("name", ["member-freeze-short", pytest.param("member-freeze-short-kip848", marks=pytest.mark.slow)])
def test_a_member_frozen_for_less_than_its_session_keeps_its_partitions(chaos_run, name):
    outcome, down_at, back_at, had = member_3_away(chaos_run, name, "member_freeze")
    moved = [e for e in events(outcome) if e["kind"] in ("assigned", "revoked", "lost") and down_at < e["ts_ms"] < back_at + 5_000]
    assert had and not moved, f"a pause shorter than the session rebalanced: {moved[:3]}"
    assert any(r["member"] == "member-3" and r["consumed_at_ms"] > back_at for r in rows(outcome.run_dir / "consumed")), \
        "member-3 consumed nothing after the pause"
    assert outcome.summary["lost_records"] == 0


@pytest.mark.slow  # 33 s; the family runs in make test through the short freeze and the hosted freeze
@pytest.mark.parametrize("name", ["member-freeze-long", "member-freeze-long-kip848"])
def test_a_member_frozen_past_its_session_is_expired_and_rejoins(chaos_run, name):
    outcome, down_at, back_at, had = member_3_away(chaos_run, name, "member_freeze")
    taken = [e for e in events(outcome, "assigned") if e["member"] != "member-3" and down_at < e["ts_ms"] < back_at
             and had & set(e["partitions"])]
    assert taken, f"the others never took {had} during the pause"
    assert min(e["ts_ms"] for e in taken) - down_at >= 9_000, "expired before its 10 s session was up"
    again = [e for e in events(outcome, "assigned") if e["member"] == "member-3" and e["ts_ms"] > back_at and e["partitions"]]
    assert again, "member-3 never rejoined after the pause"
    summary = outcome.summary
    assert summary["lost_records"] == 0
    # member-3 thaws with records it fetched before the pause and hands them over before it learns it was
    # expired (the zombie window): duplicates the analysis may count over budget, every one during the pause
    [freeze] = [f["id"] for f in rows(outcome.run_dir, "faults") if f["kind"] == "member_freeze"]
    duplicates = [a for a in summary["anomalies"] if a["type"].startswith("duplicate")]
    assert all(freeze in a["fault_ids"] for a in duplicates), [a for a in duplicates if freeze not in a["fault_ids"]][:3]
    print(f"\nmember-3 frozen 16 s past its 10 s session: {len(duplicates)} duplicate anomalies, reasons "
          f"{sorted({a.get('reason') for a in duplicates})}")
