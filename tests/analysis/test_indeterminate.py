"""Issue 37, part 1: operations whose outcome is known late or never (Jepsen's :info) and lost apart from unseen.
A commit took effect somewhere between when it was sent and its answer (or the hand-over), one never answered at
any time from its sending on, or never: a check reports only what every reading supports, and counts the rest as
ambiguous in its info. Planted histories, a real Spark."""
from analysis import analyze
from analysis.rundir.history import OPEN
from analysis_runs import T0, Run


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def frozen_with_a_commit_in_flight(root, answered: bool, sent_logged: bool = True, failed: bool = False) -> Run:
    """The issue's scenario. j (VerifiableConsumer) owns t:0 from 877 (its committed offset), consumes 877-905,
    sends a commit of 906 and is frozen before its answer. The group hands t:0 to m2 at 10000, which starts at
    906 (the group's committed offset then) and commits 1190 at 12000. j's answer (success) is logged 14 s after
    it was sent, after its eviction (``answered``; an error when ``failed``), or never: j was killed right after
    sending it."""
    r = Run(root)
    r.produce("t", 0, range(1300))
    for m, client in (("j", "java"), ("m2", "librdkafka")):
        r.event(m, "started", 0, client=client, protocol="classic", assignor="range", commit="sync")
    r.event("j", "assigned", 10, ["t:0"], generation=1).event("m2", "assigned", 10, [], generation=1)
    r.consume("j", "t", 0, range(0, 877), at=100, generation=1)
    r.event("j", "committed", 1000, offsets={"t:0": 877}, generation=1, requested_at_ms=T0 + 990)
    r.consume("j", "t", 0, range(877, 906), at=1100, generation=1)
    sent = {"requested_at_ms": T0 + 1130}
    if sent_logged:
        r.event("j", "commit_sent", 1130, offsets={"t:0": 906}, generation=1, commit_id=7)
        sent["commit_id"] = 7
    r.event("m2", "revoked", 9900, [], generation=1).event("m2", "assigned", 10000, ["t:0"], generation=2)
    r.consume("m2", "t", 0, range(906, 1190), at=10100, generation=2)
    r.event("m2", "committed", 12000, offsets={"t:0": 1190}, generation=2, requested_at_ms=T0 + 11990)
    r.consume("m2", "t", 0, range(1190, 1300), at=12100, generation=2)
    r.event("m2", "committed", 13000, offsets={"t:0": 1300}, generation=2, requested_at_ms=T0 + 12990)
    if answered and failed:
        r.event("j", "commit_failed", 15130, offsets={"t:0": 906}, generation=1,
                detail="UNKNOWN_MEMBER_ID: Commit failed: Broker: Unknown member", **sent)
        r.event("j", "lost", 15200, ["t:0"], generation=1)
    elif answered:
        r.event("j", "committed", 15130, offsets={"t:0": 906}, generation=1, **sent)
        r.event("j", "lost", 15200, ["t:0"], generation=1)
    else:
        r.fault("f1", 1140, 1200, kind="member_crash", target="j", ends_process=True)
    r.event("m2", "stopped", 20000)
    return r


def test_a_commit_answered_after_a_freeze_took_effect_by_the_hand_over(tmp_path, spark):
    s = analyze(frozen_with_a_commit_in_flight(tmp_path / "run", answered=True).write(), spark=spark)
    assert s["anomaly_counts"]["commit_ahead"] == 0, of(s, "commit_ahead")
    assert s["checks"]["commit_ahead"]["ambiguous"] == 0  # the hand-over settles it: the old generation is fenced
    assert s["valid"] is True and s["lost_records"] == 0


def test_a_commit_whose_member_was_killed_before_the_answer_is_ambiguous_not_a_finding(tmp_path, spark):
    rd = frozen_with_a_commit_in_flight(tmp_path / "run", answered=False).write()
    s = analyze(rd, spark=spark)
    page = (rd / "report" / "index.html").read_text()
    assert "1 case(s) only some reading of the commits&#x27; windows supports" in page and "from 877 or 906" in page
    assert s["anomaly_counts"]["commit_ahead"] == 0, of(s, "commit_ahead")
    info = s["checks"]["commit_ahead"]
    assert info["indeterminate_commits"] == 1
    assert info["ambiguous"] == 1 and info["ambiguous_examples"] == ["m2 t:0 committed 1190: from 877 or 906"]
    assert s["valid"] is True


def test_a_commit_answered_with_an_error_may_still_have_taken_effect(tmp_path, spark):
    """Both clients retry a commit themselves: an error can answer a retry whose first attempt the coordinator
    applied. Seen on a 500-member run (a commit answered UNKNOWN_MEMBER_ID 12 s after it was sent, and the
    partition's next owner started from its offset): ambiguous, not commit_ahead."""
    s = analyze(frozen_with_a_commit_in_flight(tmp_path / "run", answered=True, failed=True).write(), spark=spark)
    assert s["anomaly_counts"]["commit_ahead"] == 0, of(s, "commit_ahead")
    info = s["checks"]["commit_ahead"]
    assert info["indeterminate_commits"] == 1
    assert info["ambiguous"] == 1 and info["ambiguous_examples"] == ["m2 t:0 committed 1190: from 877 or 906"]
    assert s["valid"] is True


def test_without_the_commit_sent_event_the_killed_members_commit_leaves_no_trace(tmp_path, spark):
    """What an old run (or a member that does not log commit_sent) shows: today's reading, the false finding the
    issue reported. Kept as the contrast that proves the event is what removes it."""
    s = analyze(frozen_with_a_commit_in_flight(tmp_path / "run", answered=False, sent_logged=False).write(), spark=spark)
    [a] = of(s, "commit_ahead")
    assert (a["from_offset"], a["committed_offset"], a["skipped"]) == (877, 1190, 29)


def test_a_real_commit_ahead_is_still_found_with_a_commit_window(tmp_path, spark):
    """A member that commits past a record it never consumed in its own ownership (librdkafka#4844's mechanism):
    the window of the previous owner's commit does not hide it."""
    r = frozen_with_a_commit_in_flight(tmp_path / "run", answered=True)
    r.consumed["m2"] = [row for row in r.consumed["m2"] if row["offset"] != 1000]  # m2 skipped 1000, committed past it
    s = analyze(r.write(), spark=spark)
    [a] = of(s, "commit_ahead")
    assert (a["first_skipped"], a["skipped"], a["committed_offset"]) == (1000, 1, 1190)


def test_two_members_commits_in_flight_together_are_no_regression(tmp_path, spark):
    """b's commit of 50 was sent before a's commit of 60 was answered: the broker may have applied them in either
    order, so the regression is ambiguous; a regression of commits known apart is still found."""
    r = Run(tmp_path / "run")
    r.produce("t", 0, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, protocol="classic", assignor="range", commit="sync")
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(0, 60), at=100, generation=1)
    r.event("a", "committed", 900, offsets={"t:0": 60}, generation=1, requested_at_ms=T0 + 200)
    r.event("b", "assigned", 150, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(0, 100), at=160, generation=2)
    r.event("b", "committed", 1000, offsets={"t:0": 50}, generation=2, requested_at_ms=T0 + 800)
    r.event("b", "committed", 1100, offsets={"t:0": 100}, generation=2, requested_at_ms=T0 + 1050)
    r.event("a", "committed", 1300, offsets={"t:0": 70}, generation=1, requested_at_ms=T0 + 1200)
    s = analyze(r.write(), spark=spark)
    regressions = [(a["from_offset"], a["to_offset"]) for a in of(s, "commit_regression")]
    assert regressions == [(100, 70)]  # 70 was sent after 100 was answered: known apart
    assert s["checks"]["commit_regression"]["ambiguous"] == 1


def test_a_group_that_did_not_catch_up_has_unseen_records_not_lost_ones(tmp_path, spark):
    """t:0: read up to 59 with 40-49 never delivered (a read went past them: lost) and 60-99 beyond the read
    (unseen); t:1: committed 80 having read 0-29 (the commit went past 30-79: lost), 80-99 unseen."""
    r = Run(tmp_path / "run")
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    r.event("a", "started", 0, protocol="classic", assignor="range", commit="sync")
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1)
    r.consume("a", "t", 0, [*range(0, 40), *range(50, 60)], at=100, generation=1)
    r.consume("a", "t", 1, range(0, 30), at=200, generation=1)
    r.event("a", "committed", 300, offsets={"t:0": 60, "t:1": 80}, generation=1, requested_at_ms=T0 + 290)
    s = analyze(r.write(), spark=spark)
    assert sorted((a["partition"], tuple(a["offsets"])) for a in of(s, "lost")) == [(0, (40, 49)), (1, (30, 79))]
    assert s["lost_records"] == 60 and s["unseen_records"] == 60
    assert s["checks"]["unseen"]["lag"] == [{"topic": "t", "partition": 0, "unseen": 40, "read_up_to": 59},
                                            {"topic": "t", "partition": 1, "unseen": 20, "read_up_to": 79}]
    assert {p["partition"]: (p["lost"], p["unseen"]) for p in s["partitions"]} == {0: (10, 40), 1: (50, 20)}
    assert s["valid"] is False  # for the lost ones; unseen alone does not invalidate


def test_an_at_most_once_member_killed_with_a_commit_in_flight_loses_within_its_budget(tmp_path, spark):
    """before_process: a commits 60 (sent, never answered) before processing 50-59 and is killed; b starts at 60.
    The commit may have taken effect, so 50-59 are within a's budget, not lost."""
    r = Run(tmp_path / "run")
    r.produce("t", 0, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, protocol="classic", assignor="range", commit="before_process")
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.event("a", "commit_sent", 90, offsets={"t:0": 50}, generation=1, commit_id=0)
    r.event("a", "committed", 95, offsets={"t:0": 50}, generation=1, commit_id=0, requested_at_ms=T0 + 90)
    r.consume("a", "t", 0, range(0, 50), at=100, generation=1)
    r.event("a", "commit_sent", 250, offsets={"t:0": 60}, generation=1, commit_id=1)
    r.fault("f1", 260, 2000, kind="member_crash", target="a", ends_process=True)
    r.event("b", "revoked", 1200, [], generation=1).event("b", "assigned", 1300, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(60, 100), at=1400, generation=2)
    r.event("b", "committed", 1600, offsets={"t:0": 100}, generation=2, requested_at_ms=T0 + 1590)
    r.event("b", "stopped", 2500)
    s = analyze(r.write(), spark=spark)
    assert [(a["offsets"], a["count"]) for a in of(s, "lost_within_budget")] == [([50, 59], 10)]
    assert s["lost_records"] == 0 and s["valid"] is True


def test_commit_windows_in_the_history(tmp_path):
    """The history pairs commit_sent with its answer by commit_id; an answer carries requested_at_ms; a commit never
    answered is info, in effect at the latest by the next hand-over."""
    from analysis.rundir.history import build
    r = frozen_with_a_commit_in_flight(tmp_path / "killed", answered=False)
    h = build(r.write())
    [info] = [c for c in h.commits if c.info]
    assert (info.offset, info.earliest, info.eff_ts, info.ok) == (906, T0 + 1130, T0 + 10000, False)
    r = frozen_with_a_commit_in_flight(tmp_path / "late", answered=True)
    late = next(c for c in build(r.write()).commits if c.offset == 906)
    assert (late.earliest, late.eff_ts, late.ts, late.ok) == (T0 + 1130, T0 + 10000, T0 + 15130, True)
    assert OPEN > late.eff_ts
