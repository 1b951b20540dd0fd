"""pytest plugin (entry point `kafka_chaos`): fixtures for chaos suites on a real cluster.

    def test_freeze(kafka_cluster, chaos_run):
        outcome = chaos_run({"faults": [{"kind": "broker_freeze", "target": "coordinator", "at_s": 5, "duration_s": 8}]})
        assert outcome.summary["lost_records"] == 0

`kafka_cluster` is one cluster for the whole session (start-up is the slow part); each `chaos_run`
gets its own topics and group on it (their names end in a random suffix), and its own run directory
under the test's tmp_path.
"""
from __future__ import annotations

import secrets

import pytest

from harness.cluster import KafkaCluster
from harness.scenario import ClusterSpec, parse_scenario


# The session cluster starts before any scenario is known: lanes for up to 8 members and the producer.
SESSION_LANES = tuple(f"member-{n}" for n in range(1, 9)) + ("producer-1",)


def unique_names(scenario: dict, suffix: str) -> dict:
    """The scenario with `-suffix` after its group id, its topic names and the topics topic_create makes, so
    runs on one cluster never share them; a consumer_group.pattern then matches the names before the suffix."""
    named = lambda spec, default: {**(spec or {}), "name": f"{(spec or {}).get('name', default)}-{suffix}"}  # noqa: E731
    group = scenario.get("consumer_group", {})
    out = {**scenario, "consumer_group": {**group, "group_id": f"{group.get('group_id', 'chaos-group')}-{suffix}"}}
    if group.get("pattern"):  # matches this run's topics only, not those of earlier runs on the cluster
        out["consumer_group"]["pattern"] = f"({group['pattern']})-{suffix}"
    if "topics" in scenario:
        out["topics"] = [named(t, "chaos") for t in scenario["topics"]]
    else:
        out["topic"] = named(scenario.get("topic"), "chaos")
    out["faults"] = [{**f, "target": f"{f['target']}-{suffix}"} if f.get("kind") == "topic_create" else f
                     for f in scenario.get("faults", [])]
    return out


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
        parsed = parse_scenario(unique_names(scenario, secrets.token_hex(3)), "chaos_run")
        outcome = run_scenario(parsed, tmp_path / "runs", cluster=kafka_cluster)
        if analyze and parsed.analysis.enabled:
            from analysis import analyze as analyze_run
            outcome.summary = analyze_run(outcome.run_dir, grace_ms=parsed.analysis.grace_ms)
        return outcome

    return run
