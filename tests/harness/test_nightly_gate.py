"""The nightly job's verdict (harness/nightly/gate.py, `kafka-chaos gate`): green when nothing changed, red when
something did, and the summary says which."""
import json

from harness.cli import main

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.cluster.test_catalog_runs" name="test_member_join[range]"/>
<testcase classname="tests.cluster.test_catalog_runs" name="test_leader_failover">{failure}</testcase>
<testcase classname="tests.cluster.test_matrix" name="test_matrix[cell]">{error}</testcase>
</testsuite></testsuites>"""


def night(tmp_path, failure="", error="", zoo_gate=(), codes=("pytest 0", "zoo 0"), name="20261125-0217",
          families=None, selection="all"):
    d = tmp_path / name
    d.mkdir()
    (d / "families.json").write_text(json.dumps({"selection": selection, "ran": families or {"broker_crash": 2}}))
    (d / "junit.xml").write_text(JUNIT.format(failure=failure, error=error))
    (d / "zoo.json").write_text(json.dumps({"date": "2026-11-25", "bugs": [{"bug": "KAFKA-1", "gate": list(zoo_gate)}]}))
    (d / "exit-codes").write_text("\n".join(codes) + "\n")
    return d


def test_green_when_nothing_changed(tmp_path, capsys):
    d = night(tmp_path)
    assert main(["gate", str(d)]) == 0
    text = (d / "summary.md").read_text()
    assert "GREEN" in text and "3 slow tests" in text and "1 zoo bugs" in text


def test_a_failed_expectation_is_red_and_named(tmp_path):
    d = night(tmp_path, failure='<failure message="AssertionError: 12 records lost">trace</failure>', codes=("pytest 1",))
    assert main(["gate", str(d)]) == 1
    text = (d / "summary.md").read_text()
    assert "RED" in text and "test_leader_failover: AssertionError: 12 records lost" in text
    assert "## Harness failures: 0" in text


def test_a_harness_error_is_red_as_a_harness_failure(tmp_path):
    d = night(tmp_path, error='<error message="failed on setup with RuntimeError: cluster did not start"/>')
    assert main(["gate", str(d)]) == 1
    assert "## Harness failures: 1" in (d / "summary.md").read_text()


def test_a_zoo_bug_that_moved_is_red_with_its_reason(tmp_path):
    reason = "KAFKA-1: the signature showed on the fixed release 3.2.1 in 1 of 3 runs"
    d = night(tmp_path, zoo_gate=[reason], codes=("pytest 0", "zoo 1"))
    assert main(["gate", str(d)]) == 1
    text = (d / "summary.md").read_text()
    assert "## Zoo bugs that moved: 1" in text and reason in text


def test_a_step_that_crashed_without_its_file_is_a_harness_failure(tmp_path):
    d = night(tmp_path)
    (d / "zoo.json").unlink()
    (d / "exit-codes").write_text("pytest 0\nzoo 2\n")
    assert main(["gate", str(d)]) == 1
    assert "zoo exited 2 without writing its results" in (d / "summary.md").read_text()


def test_trend_outliers_are_listed_but_not_red_alone(tmp_path):
    d = night(tmp_path)
    trend = tmp_path / "trend.json"
    trend.write_text(json.dumps({"outliers": [{"text": "default/librdkafka: 1,400 re-deliveries, last 10 nights 0-300"}]}))
    assert main(["gate", str(d), "--trend", str(trend)]) == 0
    assert "1,400 re-deliveries" in (d / "summary.md").read_text()


def test_a_missing_night_is_bad_input(tmp_path, capsys):
    assert main(["gate", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_a_family_the_last_complete_night_ran_and_this_one_did_not_is_red(tmp_path):
    night(tmp_path, name="20261124-0217", families={"broker_crash": 2, "rolling_restart": 1})
    night(tmp_path, name="20261124-0900", families={"broker_crash": 1}, selection="rolling")  # a part: not compared
    d = night(tmp_path, families={"broker_crash": 3})
    assert main(["gate", str(d)]) == 1
    text = (d / "summary.md").read_text()
    assert "RED" in text and "rolling_restart (ran 1 times the last complete night)" in text


def test_a_selected_part_is_not_held_to_the_whole(tmp_path):
    night(tmp_path, name="20261124-0217", families={"broker_crash": 2, "rolling_restart": 1})
    d = night(tmp_path, families={"broker_crash": 3}, selection="crash")
    assert main(["gate", str(d)]) == 0


def test_a_part_is_held_to_its_own_last_night(tmp_path):
    """The nightly workflow runs the families in two parts, each in its own folder of nights: a family the part's last
    night ran and this one did not is red, as for a whole night."""
    night(tmp_path, name="20261124-0217", families={"broker_crash": 2, "rolling_restart": 1}, selection="not (eos)")
    d = night(tmp_path, families={"broker_crash": 3}, selection="not (eos)")
    assert main(["gate", str(d)]) == 1
    assert "rolling_restart (ran 1 times the last night of this part)" in (d / "summary.md").read_text()


def test_a_night_whose_tests_ran_without_the_ledger_is_a_harness_failure(tmp_path):
    d = night(tmp_path)
    (d / "families.json").unlink()
    assert main(["gate", str(d)]) == 1
    assert "families.json: missing or unreadable" in (d / "summary.md").read_text()


def test_an_open_bug_with_a_contrast_is_red_only_when_the_contrast_shows_it_or_the_bug_stops(tmp_path):
    """The zoo.json `kafka-chaos zoo` writes for an unreported bug run beside another client kind: the signature
    expected on the affected client, never on the contrast."""
    from collections import Counter
    from pathlib import Path

    from analysis.api import signature
    from harness.zoo.runner import BugResult, Tally, write
    from harness.zoo.spec import ZooSpec
    spec = ZooSpec(bug="unreported:librdkafka-kip848-lost-assignment", swap="client_kind", affected="2.16.1",
                   upstream="docs/upstream/librdkafka-kip848-lost-assignment.md", contrast={"client": "java-member"},
                   status="open", rate=0.9, why="A sentence that says why. Another one that says why not elsewhere.",
                   signature=[{"anomaly": "unapplied_assignment"}])

    def the_night(name, affected, contrast):
        tallies = {}
        for side, release, shown in (("affected", "2.16.1", affected), ("contrast", "java-member", contrast)):
            t = tallies[side] = Tally(side, release)
            for i in range(3):
                t.started += 1
                t.add(Path(f"{side}-{i}"), signature.Match(i < shown, [1], [None], Counter()))
        d = night(tmp_path, name=name)
        write(d, [BugResult("kip848-lost-assignment.yaml", spec, tallies)], "2026-11-29")
        return d

    assert main(["gate", str(the_night("20261129-0100", 3, 0))]) == 0
    d = the_night("20261129-0200", 3, 1)
    assert main(["gate", str(d)]) == 1
    text = (d / "summary.md").read_text()
    assert "## Zoo bugs that moved: 1" in text and "the signature showed on the contrast client java-member in 1 of 3" in text
    d = the_night("20261129-0300", 0, 0)
    assert main(["gate", str(d)]) == 1
    assert "maybe fixed upstream" in (d / "summary.md").read_text()
