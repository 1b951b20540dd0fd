"""The assertion helpers and the plugin's failure report on real analysis output, with no cluster. The run is
analysis/engine/synthetic.py's: a hand-over with a re-delivered tail, a step back inside one ownership (invalid: backwards,
duplicate_over_budget) and partitions waiting around the rebalance (stalls, if stall_ms is short). The plugin's
load_chaos_run wraps an analysed run directory, and pytester runs a user's test file on it."""
import json
import shutil
from xml.etree import ElementTree

import pytest

from analysis.api import analyze
from analysis.api import write_synthetic_run as write_run
from harness.plugin.assertions import ChaosAssertionError, ChaosRun
from harness.plugin.fixtures import JUNIT_FIELDS


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The synthetic run analysed three ways: a stall is a wait over 1 s, or over 60 s; and without events/ (every
    check that needs them does not run)."""
    root = tmp_path_factory.mktemp("analysed")
    dirs = {name: write_run(root / name) for name in ("stalled", "calm", "blind")}
    shutil.rmtree(dirs["blind"] / "events")
    for name, stall_ms in (("stalled", 1_000), ("calm", 60_000), ("blind", None)):
        analyze(dirs[name], stall_ms=stall_ms)
    return dirs


def failure(call) -> str:
    with pytest.raises(ChaosAssertionError) as failed:
        call()
    return str(failed.value)


def test_assert_no_stall_fails_with_the_stalls_and_passes_without(runs):
    said = failure(ChaosRun.load(runs["stalled"]).assert_no_stall)
    assert said.startswith("7 stall(s) longer than 1000 ms\n"), said
    assert "  stall: t-3 offset 2000, members a, b (nothing delivered for 2.5 s" in said and f"report: {runs['stalled']}/report/index.html" in said, said
    ChaosRun.load(runs["calm"]).assert_no_stall()


def test_assert_valid_on_an_invalid_run_names_its_anomalies(runs):
    said = failure(ChaosRun.load(runs["calm"]).assert_valid)
    assert said.startswith("the run is invalid: anomalies {'duplicate': 310, 'backwards': 1, 'duplicate_over_budget': 10}\n"), said
    assert "  backwards: t-0 offset" in said and "  duplicate_over_budget: t-0 offsets 10-19" in said, said


def test_checks_that_did_not_run_are_could_not_verify(runs):
    blind = ChaosRun.load(runs["blind"])
    assert "could not verify: the stall check did not run (no events)" in failure(blind.assert_no_stall)
    assert "could not verify: the duplicate_over_budget check did not run (no events)" in \
        failure(blind.assert_duplicates_within_budget)
    assert "could not verify: the rebalances check did not run (no events)" in failure(lambda: blind.assert_rebalances(9))
    assert "skip did not run (no events)" in failure(blind.assert_valid)
    blind.assert_no_loss()  # the lost check needs no events


USER_TEST = """
def test_the_run(load_chaos_run):
    run = load_chaos_run({run_dir!r})
    run.assert_{helper}()
"""


def user_test(pytester, run_dir, helper: str, *args):
    pytester.makepyfile(USER_TEST.format(run_dir=str(run_dir), helper=helper))
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml", *args)
    properties = {p.get("name"): p.get("value") for p in ElementTree.parse(pytester.path / "junit.xml").iter("property")}
    return result, properties


def test_a_failing_user_test_lists_its_runs_and_the_junit_xml_carries_their_figures(pytester, runs):
    run_dir = runs["stalled"]
    result, properties = user_test(pytester, run_dir, "no_stall")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*7 stall(s) longer than 1000 ms*", "*- kafka-chaos runs -*",
                                 f"run directory: {run_dir}", f"report: {run_dir}/report/index.html"])
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert properties == {"kafka_chaos.run_dir": str(run_dir), "kafka_chaos.report": f"{run_dir}/report/index.html",
                          **{f"kafka_chaos.{key}": str(summary[key]) for key in JUNIT_FIELDS},
                          "kafka_chaos.checks_not_decided": ""}
    assert (properties["kafka_chaos.valid"], properties["kafka_chaos.lost_records"]) == ("False", "0")


def test_a_passing_user_test_shows_no_runs_section(pytester, runs):
    result, properties = user_test(pytester, runs["calm"], "no_stall", "-rA")
    result.assert_outcomes(passed=1)
    assert "kafka-chaos runs" not in result.stdout.str()
    assert properties["kafka_chaos.run_dir"] == str(runs["calm"])


def test_the_junit_xml_names_the_checks_that_did_not_run(pytester, runs):
    result, properties = user_test(pytester, runs["blind"], "no_stall")
    result.stdout.fnmatch_lines(["*could not verify: the stall check did not run (no events)*", "*- kafka-chaos runs -*"])
    assert "stall did not run (no events)" in properties["kafka_chaos.checks_not_decided"]
    assert properties["kafka_chaos.rebalances"] == "None"
