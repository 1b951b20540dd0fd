"""pytest plugin (entry point `kafka_chaos`): fixtures for chaos suites on a real cluster.

    def test_freeze(kafka_cluster, chaos_run):
        outcome = chaos_run({"faults": [{"kind": "broker_freeze", "target": "coordinator", "at_s": 5, "duration_s": 8}]})
        assert outcome.summary["lost_records"] == 0

`kafka_cluster` is one cluster for the whole session (start-up is the slow part); each `chaos_run`
gets its own topic and group on it, and its own run directory under the test's tmp_path.
"""
from __future__ import annotations

import secrets

import pytest

from harness.cluster import KafkaCluster
from harness.scenario import ClusterSpec, parse_scenario


# The session cluster starts before any scenario is known: lanes for up to 8 members and the producer.
SESSION_LANES = tuple(f"member-{n}" for n in range(1, 9)) + ("producer-1",)


@pytest.fixture(scope="session")
def kafka_cluster():
    with KafkaCluster(ClusterSpec(), run_id=f"pytest-{secrets.token_hex(3)}", client_lanes=SESSION_LANES) as cluster:
        yield cluster


@pytest.fixture
def chaos_run(kafka_cluster, tmp_path):
    """Run a scenario (a dict, as in a scenario file) on the session cluster, analyse it, return the outcome."""
    from harness.run import run_scenario

    def run(scenario: dict, analyze: bool = True):
        kafka_cluster.reset_faults()  # one test's leftovers must not poison the next
        suffix = secrets.token_hex(3)
        scenario = {**scenario,
                    "topic": {**scenario.get("topic", {}), "name": f"{scenario.get('topic', {}).get('name', 'chaos')}-{suffix}"},
                    "consumer_group": {**scenario.get("consumer_group", {}),
                                       "group_id": f"{scenario.get('consumer_group', {}).get('group_id', 'chaos-group')}-{suffix}"}}
        parsed = parse_scenario(scenario, "chaos_run")
        outcome = run_scenario(parsed, tmp_path / "runs", cluster=kafka_cluster)
        if analyze and parsed.analysis.enabled:
            from analysis import analyze as analyze_run
            outcome.summary = analyze_run(outcome.run_dir, grace_ms=parsed.analysis.grace_ms)
        return outcome

    return run
