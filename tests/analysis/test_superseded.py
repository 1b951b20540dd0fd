"""Issue 51, item 6: ownership follows what the owner did (analysis/rundir/history.py, supersede). An older owner that the
coordinator still accepted commits of a partition from after a newer owner's ownership of it ended was never
superseded; a frozen or killed member that was superseded stays so. Planted histories; the analysis through a
real Spark."""
import pytest

from analysis import analyze

from analysis.rundir import history

from analysis.figures import rebalance_cost
from analysis_runs import T0, Run

JAVA = {"client": "java-member", "protocol": "consumer", "assignor": "uniform", "commit": "sync"}
SYNC = {"client": "librdkafka", "protocol": "classic", "assignor": "cooperative-sticky", "commit": "sync"}


def commit(r: Run, member: str, at: int, offset: int, commit_id: int, partition="t:0", answer="committed",
           sent_logged=True, **fields):
    """A synchronous commit sent 10 ms before its answer at ``at``: commit_sent, then its answer with its window
    (without it when not ``sent_logged``: a run written before commit windows)."""
    window = {"commit_id": commit_id, "requested_at_ms": T0 + at - 10} if sent_logged else {}
    if sent_logged:
        r.event(member, "commit_sent", at - 10, offsets={partition: offset}, commit_id=commit_id)
    r.event(member, answer, at, offsets={partition: offset}, **window, **fields)


def period(h, member, partition=0, nth=0):
    return [p for p in h.periods if p.member == member and p.partition == partition][nth]


def handed_on(r: Run, b_from: int, b_to: int) -> Run:
    """a owns t:0 from 10 ms and consumes 0-49; b owns it from ``b_from`` to ``b_to`` (consumes 50-79, commits 80),
    c from ``b_to`` (consumes 80-99, commits 100)."""
    r.produce("t", 0, range(100))
    for m in "abc":
        r.event(m, "started", 0, **SYNC)
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(50), at=100, step=5, generation=1)
    r.event("b", "assigned", b_from, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(50, 80), at=b_from + 100, step=5, generation=2)
    commit(r, "b", b_from + 400, 80, 1)
    r.event("b", "revoked", b_to, ["t:0"], generation=2).event("c", "assigned", b_to, ["t:0"], generation=3)
    r.consume("c", "t", 0, range(80, 100), at=b_to + 100, step=5, generation=3)
    commit(r, "c", b_to + 400, 100, 1)
    return r


def java_cell(root) -> Run:
    """java-200m-4ppm-consumer-uniform-join-r2, t:365, cut down: member-20 gets it at epoch 157 (1 s), member-63 joins
    and gets it at the same epoch 340 ms later and revokes it at 3.5 s. member-20 never revokes it: it consumes and
    commits it every 5 s to the run's end, and the coordinator, stable from 5 s, holds it owns it."""
    r = Run(root)
    r.produce("t", 365, range(300))
    r.fault("member_join-1", 900, 1_000, kind="member_join", target="group")
    r.event("member-20", "started", 0, **JAVA).event("member-63", "started", 1_200, **JAVA)
    r.event("member-20", "assigned", 1_000, ["t:365"], generation=157)
    r.event("member-63", "assigned", 1_340, ["t:365"], generation=157)
    r.event("member-63", "revoked", 3_500, ["t:365"], generation=158)
    r.consume("member-20", "t", 365, range(300), at=1_100, step=100, generation=157)
    for i, at in enumerate(range(6_000, 36_000, 5_000)):
        commit(r, "member-20", at, (at - 1_100) // 100, i, partition="t:365", generation=158)
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v0")
    r.group_state(5_000, state="Stable", members=2, assigned=1, group_epoch=158, assignment_epoch=158,
                  member_epochs={"member-20": 158, "member-63": 158},
                  assignments={"member-20": ["t:365"], "member-63": []}, since=4_500)
    r.group_state(40_000, "sampler_end", samples=80)
    r.event("member-20", "stopped", 40_000).event("member-63", "stopped", 40_000)
    return r


def test_an_owner_that_went_on_committing_after_the_newer_owners_end_was_never_superseded(tmp_path, spark):
    run_dir = java_cell(tmp_path / "run").write()
    h = history.build(run_dir)
    owner = period(h, "member-20", 365)
    assert (owner.end, owner.end_kind) == (T0 + 40_000, "stopped")
    cost = rebalance_cost.cost(h, h.faults[0], [("t", 365)], 200, T0 + 39_000)
    assert cost["settled"] and cost["unserved_longest_ms"] == 0
    s = analyze(run_dir, spark=spark)
    assert s["anomaly_counts"]["unapplied_assignment"] == 0, s["anomalies"]
    assert s["rebalance_figures"]["consumed_outside_ownership"] == 0
    assert s["valid"] is True


@pytest.mark.parametrize("sent_logged", [True, False])
def test_a_frozen_member_is_superseded_though_its_late_commit_answer_comes_after_the_newer_owners_end(
        tmp_path, spark, sent_logged):
    """a is frozen from 900 ms with a commit of 50 in flight; b owns t:0 from 1 s to 1.5 s, c from 1.5 s. a comes
    back at 2 s: the answer of its commit sent before the freeze (with its window, or, in an older run, without),
    a commit the coordinator refuses, then its loss. It consumed nothing of t:0 after b's end: superseded at 1 s,
    and its late commit took effect by that hand-over (no regression behind c's 100)."""
    r = handed_on(Run(tmp_path / "run"), 1_000, 1_500)
    if sent_logged:
        r.event("a", "commit_sent", 890, offsets={"t:0": 50}, commit_id=1)
        r.event("a", "committed", 2_000, offsets={"t:0": 50}, commit_id=1, requested_at_ms=T0 + 890, generation=1)
    else:
        r.event("a", "committed", 2_000, offsets={"t:0": 50}, generation=1)
    commit(r, "a", 2_050, 50, 2, answer="commit_failed", sent_logged=sent_logged, generation=1,
           detail="UNKNOWN_MEMBER_ID: Commit failed")
    r.event("a", "lost", 2_100, ["t:0"], generation=1)
    run_dir = r.write()
    h = history.build(run_dir)
    frozen = period(h, "a")
    assert (frozen.end, frozen.end_kind, frozen.logged_end) == (T0 + 1_000, "superseded by b", T0 + 2_100)
    late = next(c for c in h.commits if c.member == "a" and c.ok)
    assert late.eff_ts == T0 + 1_000
    s = analyze(run_dir, spark=spark)
    assert s["anomaly_counts"]["commit_regression"] == 0, s["anomalies"]
    assert s["valid"] is True


def test_a_killed_member_stays_superseded_and_its_next_lifes_commits_are_not_its_old_ones(tmp_path):
    """a is killed at 500 ms with a commit in flight; b owns t:0 from 11 s (a's session expired) to 13 s, c from
    13 s. a's process restarts at 20 s and gets t:0 back from c at 21 s, where it commits: that life's commits say
    nothing of the old one, which ended at 11 s; the commit in flight took effect by that hand-over, or never."""
    r = handed_on(Run(tmp_path / "run"), 11_000, 13_000)
    r.event("a", "commit_sent", 450, offsets={"t:0": 50}, commit_id=1)
    r.fault("member_crash-1", 500, 20_000, kind="member_crash", target="a", ends_process=True)
    r.event("a", "started", 20_000, **SYNC)
    r.event("c", "revoked", 21_000, ["t:0"], generation=4).event("a", "assigned", 21_000, ["t:0"], generation=4)
    commit(r, "a", 22_000, 110, 1, generation=4)
    h = history.build(r.write())
    killed, next_life = period(h, "a"), period(h, "a", nth=1)
    assert (killed.end, killed.end_kind, killed.logged_end) == (T0 + 11_000, "superseded by b", T0 + 20_000)
    assert (next_life.start, next_life.end) == (T0 + 21_000, history.OPEN)
    in_flight = next(c for c in h.commits if c.member == "a" and c.info)
    assert in_flight.eff_ts == T0 + 11_000
