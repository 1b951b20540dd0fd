"""commit_ahead (issue 22, librdkafka#4844's mechanism): a successful commit past an acked record that the member
never consumed in that ownership. Offsets that are no acked record (a transaction marker's gap, a write whose
outcome is unknown) are not skipped records, and an ordinary at-least-once run with rebalances has none."""
import pytest

from analysis import analyze
from analysis_runs import Run

EAGER = dict(protocol="classic", assignor="range", commit="sync")


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def ahead(s):
    return [(a["members"], a["partition"], a["committed_offset"], a["last_consumed"], a["first_skipped"], a["skipped"],
             a["from_offset"]) for a in of(s, "commit_ahead")]


def two_owners(root, fmt, a_commits, b_from, produced=range(100), a_upto=50, a_commit_at=1005):
    """a owns t:0 in generation 1 and consumes 0..a_upto-1; it is revoked at 1000 and logs its commits
    (``a_commits``) at ``a_commit_at`` (after the revocation, as librdkafka's commit callback does); b owns t:0
    in generation 2 from 1300 and consumes from ``b_from`` to the end."""
    r = Run(root, fmt)
    if produced is not None:
        r.produce("t", 0, produced)
    for m in ("a", "b"):
        r.event(m, "started", 0, **EAGER)
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, range(0, a_upto), at=100, generation=1)
    r.event("a", "revoked", 1000, ["t:0"], generation=1).event("b", "revoked", 1000, [], generation=1)
    for i, offset in enumerate(a_commits):
        r.event("a", "committed", a_commit_at + i, offsets={"t:0": offset}, generation=1)
    r.event("a", "assigned", 1300, [], generation=2).event("b", "assigned", 1300, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(b_from, 100), at=1400, generation=2)
    r.event("b", "committed", 1600, offsets={"t:0": 100}, generation=2)
    r.event("a", "stopped", 2000).event("b", "stopped", 2000)
    return r


def test_a_commit_past_an_unconsumed_acked_record_is_reported_with_the_loss(tmp_path, spark, fmt):
    """librdkafka#4844: a consumed 0-49 and committed 51, one past record 50 it never saw; b starts at 51."""
    s = analyze(two_owners(tmp_path / "run", fmt, [51], b_from=51).write(), spark=spark)
    assert ahead(s) == [(["a"], 0, 51, 49, 50, 1, 0)]
    row = of(s, "commit_ahead")[0]
    assert row["offsets"] == [50, 50] and row["count"] == 1 and row["generations"] == [1]
    assert "a committed 51 having consumed up to 49 since 0" in row["reason"]
    assert [(a["offsets"], a["count"]) for a in of(s, "lost")] == [([50, 50], 1)]
    assert s["anomaly_counts"]["commit_ahead"] == 1 and s["valid"] is False


def test_a_skipped_record_delivered_later_by_someone_else_is_still_a_commit_ahead(tmp_path, spark):
    """The next owner happens to re-read from 40 (a reset, a regression): nothing is lost, but a's commit still
    vouched for 50 to 54, records it never processed."""
    s = analyze(two_owners(tmp_path / "run", "jsonl", [55], b_from=40).write(), spark=spark)
    assert ahead(s) == [(["a"], 0, 55, 49, 50, 5, 0)]
    assert s["lost_records"] == 0 and s["valid"] is False


def test_only_the_range_since_the_previous_commit_is_judged(tmp_path, spark):
    """a commits 30 (fine), then 52: 50 and 51 are reported once, by the commit that passed them."""
    s = analyze(two_owners(tmp_path / "run", "jsonl", [30, 52], b_from=52).write(), spark=spark)
    assert ahead(s) == [(["a"], 0, 52, 49, 50, 2, 30)]


def test_a_commit_past_a_transaction_marker_is_no_commit_ahead(tmp_path, spark, fmt):
    """Offset 50 is no record (a transaction's commit marker: the producer acked nothing there); a commits 51,
    its position after the marker, and b goes on from 51."""
    produced = [o for o in range(100) if o != 50]
    s = analyze(two_owners(tmp_path / "run", fmt, [51], b_from=51, produced=produced).write(), spark=spark)
    assert s["checks"]["commit_ahead"]["queried"] == 1  # the groups could not clear it: Spark was asked, and said no
    assert ahead(s) == [] and s["lost_records"] == 0 and s["valid"] is True


@pytest.mark.parametrize("status", ["info", "fail"])
def test_a_commit_past_a_record_not_acked_is_no_commit_ahead(tmp_path, spark, status):
    r = two_owners(tmp_path / "run", "jsonl", [51], b_from=51, produced=None)
    r.produce("t", 0, range(50)).produce("t", 0, [50], status=status).produce("t", 0, range(51, 100))
    s = analyze(r.write(), spark=spark)
    assert ahead(s) == [] and s["valid"] is True


def test_the_start_of_an_ownership_at_the_partition_end(tmp_path, spark):
    """b takes t:0 over at a's commit 50, the partition's end; b's position moves one past it before record 50
    exists (an end-of-partition event counted as a record), so b consumes from 51 and commits 100: 50 is skipped,
    at the start of b's ownership, before b consumed anything (the previous commit is the start position)."""
    s = analyze(two_owners(tmp_path / "run", "jsonl", [50], b_from=51).write(), spark=spark)
    assert ahead(s) == [(["b"], 0, 100, 99, 50, 1, 50)]


def test_a_commit_before_any_delivery_past_a_record_that_came_later(tmp_path, spark):
    """b commits 51 before it consumed anything (librdkafka 2.13.0 at an empty end): last_consumed is null."""
    r = two_owners(tmp_path / "run", "jsonl", [50], b_from=51)
    r.event("b", "committed", 1350, offsets={"t:0": 51}, generation=2)
    s = analyze(r.write(), spark=spark)
    assert ahead(s) == [(["b"], 0, 51, None, 50, 1, 50)]
    assert "having consumed nothing since 50" in of(s, "commit_ahead")[0]["reason"]


def test_at_least_once_rebalances_are_clean(tmp_path, spark, fmt):
    """An eager hand-over with an uncommitted tail (a commits 40 after consuming 0-49, b re-reads 40-49), a's
    revocation commit logged after b was assigned (but before b's first record), and a cooperative member that
    keeps its partition across a rebalance and commits as it goes: no commit_ahead, and the run is valid."""
    r = two_owners(tmp_path / "run", fmt, [40], b_from=40, a_commit_at=1350)
    r.produce("t", 1, range(100))
    r.event("c", "started", 0, protocol="classic", assignor="cooperative-sticky", commit="sync")
    r.event("c", "assigned", 10, ["t:1"], generation=1)
    for i, upto in enumerate((30, 60, 100)):
        r.consume("c", "t", 1, range(upto - 30 if upto != 100 else 60, upto), at=100 + 500 * i, generation=1 + i)
        r.event("c", "committed", 150 + 500 * i, offsets={"t:1": upto}, generation=1 + i)
        r.event("c", "assigned", 400 + 500 * i, [], generation=2 + i)
    r.event("c", "stopped", 2000)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["commit_ahead"] == 0 and s["checks"]["commit_ahead"]["commits"] == 5
    assert s["anomaly_counts"]["duplicate"] == 10 and s["valid"] is True


def test_an_at_most_once_members_budget_is_not_a_commit_ahead(tmp_path, spark):
    """before_process commits a batch before it logs it; a killed member's committed, never logged batch is its
    loss budget (lost_within_budget), not a commit past records it skipped."""
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, protocol="classic", assignor="range", commit="before_process")
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=100, generation=1)
    r.event("a", "committed", 250, offsets={"t:0": 60}, generation=1)
    r.fault("f1", 300, 2000, kind="member_crash", target="a")
    r.event("b", "revoked", 1200, [], generation=1).event("b", "assigned", 1300, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(60, 100), at=1400, generation=2)
    r.event("b", "committed", 1600, offsets={"t:0": 100}, generation=2)
    r.event("b", "stopped", 2500)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["lost_within_budget"] == 10
    assert s["anomaly_counts"]["commit_ahead"] == 0 and s["valid"] is True


def test_the_question_is_asked_once_beside_the_log_pass_and_answers_as_if_asked_after(tmp_path, spark, monkeypatch):
    """commit_ahead's Spark question is known from the groups alone: the analysis starts it in a thread of its own
    while the log pass reads the records again, and the check takes that answer; the anomalies are the same as
    when the check asks it itself (checks.commit_ahead_asks, job._ask_early)."""
    import threading

    from analysis import job

    from analysis.engine import spark_plan
    asked_in = []
    real = spark_plan.commits_ahead

    def spy(*args):
        asked_in.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(spark_plan, "commits_ahead", spy)
    early = analyze(two_owners(tmp_path / "early", "parquet", [55], b_from=40).write(), spark=spark)
    assert len(asked_in) == 1 and asked_in[0].startswith("kafka-chaos-early-question")
    monkeypatch.setattr(job, "_ask_early", lambda *a: None)
    asked_in.clear()
    after = analyze(two_owners(tmp_path / "after", "parquet", [55], b_from=40).write(), spark=spark)
    assert asked_in == [threading.main_thread().name]
    assert ahead(early) == ahead(after) == [(["a"], 0, 55, 49, 50, 5, 0)]
    assert early["checks"]["commit_ahead"] == after["checks"]["commit_ahead"]
    assert not any(t.name.startswith("kafka-chaos-early-question") for t in threading.enumerate())
