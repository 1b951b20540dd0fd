"""run.json names what the scenario came from (here: the test that built it), and the trend page keys its series
by it: two runs of one scenario, each with topic and group names of its own, are one series."""
import json

import pytest

from analysis.api import trend

pytestmark = pytest.mark.cluster

TINY = {"name": "source-check", "producer": {"records": 2000, "rate": 2000}, "consumer_group": {"members": 2},
        "topic": {"partitions": 2}}


def test_run_json_names_the_test_and_two_runs_are_one_series(chaos_run, request):
    first, second = chaos_run(TINY), chaos_run(TINY)
    for run in (first, second):
        assert json.loads((run.run_dir / "run.json").read_text())["source"] == request.node.nodeid
    [series] = trend.collect([first.run_dir.parent]).values()
    assert series.identity["source"] == request.node.nodeid and len(series.rows) == 2
    assert series.identity["client"] == "librdkafka" and series.identity["membership"] == "dynamic"
    assert series.identity["client_version"][0].isdigit(), series.identity   # the version the members reported
    assert (first.run_dir / "scenario.yaml").read_text() != (second.run_dir / "scenario.yaml").read_text()  # names
