"""Issue 39: a partition the coordinator held a live member owned, in a stable group, that the member never applied
(analysis/checks/unapplied.py; the check `unapplied_assignment`). Planted histories; the real case is
tests/cluster/test_kip848_lost_assignment.py."""
from analysis.rundir import history
from analysis.checks.unapplied import MIN_MS, unapplied
from analysis_runs import T0, Run


def kip848(tmp_path, state="Stable", epoch_3=4, commits_of_3=True, held_s=40):
    """member-3 owns t:5 by its own events; from 10 s the coordinator also holds it owned t:2 (member-2 revoked it
    at 9 s) for ``held_s``; member-3 commits every 5 s if alive."""
    r = Run(tmp_path / "run")
    for m in ("member-2", "member-3"):
        r.event(m, "started", 0, client="librdkafka", protocol="consumer", commit="sync")
    r.event("member-2", "assigned", 100, ["t:0", "t:1", "t:2"], generation=3)
    r.event("member-3", "assigned", 6_000, ["t:5"], generation=4)
    r.event("member-2", "revoked", 9_000, ["t:2"], generation=4)
    if commits_of_3:
        for at in range(12_000, 10_000 + held_s * 1000, 5_000):
            r.event("member-3", "committed", at, offsets={"t:5": at // 100}, generation=4)
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v0")
    r.group_state(10_000, state=state, members=2, assigned=5, group_epoch=4, assignment_epoch=4,
                  member_epochs={"member-2": 4, "member-3": epoch_3},
                  assignments={"member-2": ["t:0", "t:1"], "member-3": ["t:2", "t:5"]}, since=9_500)
    r.group_state(10_000 + held_s * 1000, "sampler_end", samples=100)
    return history.build(r.write())


def test_a_stable_groups_partition_its_live_owner_never_applied_is_reported(tmp_path):
    h = kip848(tmp_path)
    [s] = unapplied(h, T0 + 50_000)
    assert (s["member"], s["partition"], s["from_ms"], s["to_ms"]) == ("member-3", "t:2", T0 + 10_000, T0 + 50_000)


def test_not_while_a_rebalance_is_under_way_nor_for_a_member_behind_the_target_epoch(tmp_path):
    assert unapplied(kip848(tmp_path / "a", state="Reconciling"), T0 + 50_000) == []
    assert unapplied(kip848(tmp_path / "b", epoch_3=3), T0 + 50_000) == []


def test_not_for_a_member_that_logged_nothing_since_nor_for_a_moment(tmp_path):
    """A member killed within its session: the coordinator keeps its partitions until the session ends."""
    assert unapplied(kip848(tmp_path / "a", commits_of_3=False), T0 + 50_000) == []
    short = MIN_MS // 1000 - 1
    assert unapplied(kip848(tmp_path / "b", held_s=short), T0 + 10_000 + short * 1000) == []
