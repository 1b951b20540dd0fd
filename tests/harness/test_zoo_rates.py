"""The zoo's rates, statuses and nightly gate (issue 22): every started run in the denominator, a 95 % Wilson
interval, and a one-sided binomial test against the rate the zoo file records."""
from collections import Counter
from pathlib import Path

import pytest

from analysis.api import signature
from harness.zoo.runner import BugResult, Tally, binomial_cdf, wilson
from harness.zoo.spec import ZooSpec

WHY = "A sentence that says why. Another one that says why not elsewhere."


def spec(status="reproduced", rate=0.9, fixed="1.0.1"):
    return ZooSpec(bug="KAFKA-1", upstream="u", fix=None if status == "open" else "f", affected="1.0.0",
                   fixed=None if status == "open" else fixed, status=status, rate=rate, why=WHY,
                   signature=[{"anomaly": "stall"}])


def tally(side, shown, started, failed=0):
    t = Tally(side, "1.0.0" if side == "affected" else "1.0.1")
    for i in range(started):
        t.started += 1
        if i < failed:
            t.add(None, failure="harness: boom")
        else:
            t.add(Path(f"r{i}"), signature.Match(i - failed < shown, [1], [None], Counter({"duplicate": 1})))
    return t


def result(s, affected, fixed=None):
    return BugResult("x.yaml", s, {"affected": affected, **({"fixed": fixed} if fixed else {})})


def test_wilson_interval_matches_the_textbook_figures():
    lo, hi = wilson(2, 5)
    assert (round(lo, 3), round(hi, 3)) == (0.118, 0.769)   # "2 of 5 (12–77%)"
    assert wilson(5, 5)[0] > 0.5 and wilson(4, 5)[0] < 0.5
    assert wilson(0, 0) == (0.0, 1.0)


def test_binomial_test_of_the_issue_example():
    assert binomial_cdf(1, 3, 0.9) > 0.01   # 1 of 3 for a 90 % bug passes
    assert binomial_cdf(0, 3, 0.9) < 0.01   # 0 of 3 fails
    assert binomial_cdf(3, 3, 0.4) == pytest.approx(1.0)


def test_every_started_run_is_in_the_denominator():
    t = tally("affected", 2, 5, failed=3)
    assert (t.started, t.shown, t.failed) == (5, 2, 3)
    assert t.rate_text() == "2 of 5 (12%–77%)"
    assert t.other == {"duplicate": 2}


@pytest.mark.parametrize("affected, fixed, status", [
    ((5, 5), (0, 5), "reproduced"),
    ((4, 5), (0, 5), "intermittent"),      # 4 of 5: the interval reaches below one half
    ((1, 5), (0, 5), "intermittent"),
    ((0, 5), (0, 5), "not_reproduced"),
    ((5, 5), (1, 5), "also_fixed"),
])
def test_status_from_the_runs(affected, fixed, status):
    assert result(spec(), tally("affected", *affected), tally("fixed", *fixed)).status() == status


def test_most_runs_failed_is_inconclusive():
    assert result(spec(), tally("affected", 1, 5, failed=3), tally("fixed", 0, 5)).status() == "inconclusive"


def test_an_open_bug_runs_the_affected_release_only():
    s = spec("open", 0.5)
    assert s.releases == (("affected", "1.0.0"),)
    assert result(s, tally("affected", 2, 3)).status() == "open"
    assert result(s, tally("affected", 0, 3)).status() == "not_reproduced"


def test_the_gate_is_green_when_nothing_moved():
    assert result(spec(rate=0.9), tally("affected", 1, 3), tally("fixed", 0, 3)).gate() == []
    assert result(spec("intermittent", 0.4), tally("affected", 0, 3), tally("fixed", 0, 3)).gate() == []
    assert result(spec("not_reproduced", 0), tally("affected", 0, 3), tally("fixed", 0, 3)).gate() == []


def test_the_gate_says_which_bug_moved_and_why():
    [below] = result(spec(rate=0.9), tally("affected", 0, 3), tally("fixed", 0, 3)).gate()
    assert "KAFKA-1: 0 of 3" in below and "significantly below its recorded rate 90%" in below
    [on_fixed] = result(spec(), tally("affected", 3, 3), tally("fixed", 1, 3)).gate()
    assert "the signature showed on the fixed release 1.0.1 in 1 of 3 runs" in on_fixed
    [started] = result(spec("not_reproduced", 0), tally("affected", 1, 3), tally("fixed", 0, 3)).gate()
    assert "recorded as not reproduced, now shows" in started
    [gone] = result(spec("open", 0.9), tally("affected", 0, 3)).gate()
    assert "maybe fixed upstream" in gone
    [failed] = result(spec(), tally("affected", 2, 3, failed=1), tally("fixed", 0, 3)).gate()
    assert "harness failure on 1.0.0 (affected) in 1 of 3 runs: harness: boom" in failed


def test_parts_measured_on_different_days_merge_into_one_table(tmp_path, capsys):
    import json

    from harness.cli import main
    from harness.zoo.runner import write
    day1 = write(tmp_path / "a", [result(spec(), tally("affected", 2, 2), tally("fixed", 0, 2))], "2026-11-24")
    day2 = write(tmp_path / "b", [result(spec(), tally("affected", 2, 3), tally("fixed", 0, 3))], "2026-11-25")
    assert main(["zoo", "--merge", str(day1.with_suffix(".json")), str(day2.with_suffix(".json")),
                 "--out", str(tmp_path / "docs")]) == 0
    [bug] = json.loads((tmp_path / "docs" / "zoo.json").read_text())["bugs"]
    assert (bug["affected"]["started"], bug["affected"]["shown"], bug["fixed"]["started"]) == (5, 4, 5)
    assert "2026-11-24, 2026-11-25" in (tmp_path / "docs" / "zoo.md").read_text()
    (tmp_path / "bad.json").write_text("{")
    assert main(["zoo", "--merge", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not a zoo.json table" in capsys.readouterr().err


def test_a_signature_over_a_check_that_did_not_run_could_not_be_verified():
    from harness.zoo.runner import not_run
    s = spec()
    assert not_run({"checks": {"stall": {"ran": True, "status": "ran", "count": 0}}}, s) is None
    assert not_run({"checks": {"stall": {"ran": False, "status": "not_run", "reason": "no events"}}}, s) == \
        "the stall check did not run (no events)"
    assert "crashed" in not_run({"checks": {"stall": {"status": "crashed"}}}, s)   # a summary of the old shape


# An open bug with no upstream number and no fixed release, run beside another client kind (its contrast)
UNREPORTED = {"bug": "unreported:librdkafka-kip848-lost-assignment", "swap": "client_kind",
              "upstream": "docs/upstream/librdkafka-kip848-lost-assignment.md", "affected": "1.0.0",
              "contrast": {"client": "java-member"}, "status": "open", "rate": 0.9, "why": WHY,
              "signature": [{"anomaly": "unapplied_assignment"}]}


def with_contrast(affected_shown, contrast_shown, started=3):
    t = tally("affected", affected_shown, started)
    c = Tally("contrast", "java-member")
    for i in range(started):
        c.started += 1
        c.add(Path(f"c{i}"), signature.Match(i < contrast_shown, [1], [None]))
    return BugResult("kip848-lost-assignment.yaml", ZooSpec(**UNREPORTED), {"affected": t, "contrast": c})


def test_an_open_bug_with_a_contrast_is_open_while_only_the_affected_client_shows_it():
    assert with_contrast(3, 0).status() == "open" and with_contrast(3, 0).gate() == []
    assert with_contrast(0, 0).status() == "not_reproduced"
    assert with_contrast(3, 1).status() == "also_contrast"


def test_the_gate_is_red_when_the_contrast_shows_the_signature_or_the_affected_client_stops():
    [on_contrast] = with_contrast(3, 1).gate()
    assert on_contrast == ("unreported:librdkafka-kip848-lost-assignment: the signature showed on the contrast client "
                           "java-member in 1 of 3 runs")
    [gone] = with_contrast(0, 0).gate()
    assert "0 of 3 (0%–56%) on 1.0.0, significantly below its recorded rate 90%" in gone and "maybe fixed upstream" in gone


def test_the_table_gives_the_contrast_its_row_and_merges_it(tmp_path):
    import json

    from harness.zoo.runner import markdown, merge, write
    rows = markdown([with_contrast(3, 1)], "2026-11-29").splitlines()
    assert rows[4].startswith("| unreported:librdkafka-kip848-lost-assignment | 2026-11-29 | 1.0.0 (affected) | 3 of 3 ")
    assert "| also on the contrast | open, 90% |" in rows[4]
    assert rows[5].startswith("|  |  | java-member (contrast) | 1 of 3 (6%–79%) |")
    day1 = json.loads(write(tmp_path / "a", [with_contrast(3, 0)], "2026-11-28").with_suffix(".json").read_text())
    day2 = json.loads(write(tmp_path / "b", [with_contrast(2, 0)], "2026-11-29").with_suffix(".json").read_text())
    [merged] = merge([day1, day2])
    assert (merged.affected.shown, merged.affected.started, merged.control.side, merged.control.started) == \
        (5, 6, "contrast", 6)
    assert merged.status() == "open" and merged.dates == ["2026-11-28", "2026-11-29"]
