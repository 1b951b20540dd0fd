"""Which of a plan's faults a cluster takes (harness.run.planned_faults): all on the harness's own
cluster; on an external one, the faults on the run's own processes, the client-link faults through the
user's Toxiproxy only when destructive faults are allowed, and the rest skipped with their reason."""
import pytest

from harness.cluster.external import ExternalCluster
from harness.cluster.kafka import KafkaCluster
from harness.plan import compile_plan, resolve_clients
from harness.run import RunOutcome, planned_faults
from harness.scenario import ScenarioError, parse_scenario

FAULTS = [{"kind": "member_freeze", "target": "member-1", "at_s": 1, "duration_s": 2},
          {"kind": "broker_freeze", "target": "coordinator", "at_s": 2, "duration_s": 2},
          {"kind": "latency", "target": "kafka-1", "at_s": 3, "duration_s": 2, "latency_ms": 100},
          {"kind": "latency", "target": "member-2", "at_s": 4, "duration_s": 2, "latency_ms": 100},
          {"kind": "member_leave", "target": "member-2", "at_s": 5, "duration_s": 1}]


def plan(cluster, faults=FAULTS, **group):
    outcome = RunOutcome("/nonexistent")
    scenario = parse_scenario({"faults": faults, "consumer_group": {"members": 2, **group}}, "test")
    kept = planned_faults(compile_plan(scenario, offline=True), cluster, outcome)
    return [f"{e.kind}:{e.target}" for e in kept], {s["fault"]: s["reason"] for s in outcome.skipped_faults}


def test_the_harness_cluster_takes_every_fault():
    kept, skipped = plan(KafkaCluster)
    assert len(kept) == len(FAULTS) and not skipped


def test_an_external_cluster_without_toxiproxy_keeps_the_process_faults_only():
    kept, skipped = plan(ExternalCluster("b:9092"))
    assert kept == ["member_freeze:member-1", "member_leave:member-2"]
    assert "control of the brokers' containers" in skipped["broker_freeze@2s on coordinator"]
    assert "Toxiproxy in front of the brokers" in skipped["latency@3s on kafka-1"]
    assert "proxy per workload client" in skipped["latency@4s on member-2"]


def test_a_fault_on_an_external_cluster_is_refused_unless_destructive_faults_are_allowed():
    with pytest.raises(ScenarioError, match=r"faults\[2\] \(latency@3s on kafka-1\).*--allow-destructive"):
        plan(ExternalCluster("b:9092", "http://127.0.0.1:1"))
    kept, _ = plan(ExternalCluster("b:9092", "http://127.0.0.1:1", allow_destructive=True))
    assert kept == ["member_freeze:member-1", "latency:kafka-1", "member_leave:member-2"]


def test_security_settings_come_from_the_environment_only(monkeypatch):
    from workloads.security import security_config
    assert security_config({"KAFKA_CHAOS_CLIENT_SASL_PASSWORD": "x", "KAFKA_CHAOS_CLIENT_SECURITY_PROTOCOL": "SASL_SSL",
                            "OTHER": "y"}) == {"sasl.password": "x", "security.protocol": "SASL_SSL"}
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_SASL_PASSWORD", "x")
    java = parse_scenario({"consumer_group": {"members": 2, "client": "java"}}, "test")
    with pytest.raises(ScenarioError, match="consumer_group.client: the Java member"):
        resolve_clients(java)  # before any client is resolved or any cluster started
