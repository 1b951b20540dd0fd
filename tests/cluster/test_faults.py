"""Faults heal whatever happens: normal exit, an exception in the test body, the nemesis' final heal."""
import json

import pytest

from faults.broker import BrokerFreeze
from faults.nemesis import Nemesis, Step
from faults.network import ProxyCut
from faults.timeline import FaultTimeline
from kafkanet.waiting import wait_until

pytestmark = pytest.mark.cluster


def status(broker) -> str:
    container = broker.container.get_wrapped_container()
    container.reload()
    return container.status


def test_broker_freeze_is_healed_when_the_body_raises(kafka_cluster, tmp_path):
    broker = kafka_cluster.brokers[2]
    timeline = FaultTimeline(tmp_path / "faults.jsonl")
    with pytest.raises(RuntimeError, match="boom"):
        with BrokerFreeze(broker, timeline=timeline):
            assert status(broker) == "paused"
            raise RuntimeError("boom")
    assert status(broker) == "running"
    [row] = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert row["kind"] == "broker_freeze" and row["target"] == broker.name
    assert (row["label"], row["ends_process"], row["effect_from"]) == ("broker_freeze", False, "inject")  # issue 24
    assert row["healed_at_ms"] >= row["injected_at_ms"]


def test_heal_is_idempotent(kafka_cluster):
    fault = BrokerFreeze(kafka_cluster.brokers[0]).inject()
    fault.heal()
    fault.heal()
    assert status(kafka_cluster.brokers[0]) == "running"


def test_nemesis_final_heal_ends_faults_scheduled_to_last_longer(kafka_cluster, tmp_path):
    timeline = FaultTimeline(tmp_path / "faults.jsonl")
    broker = kafka_cluster.brokers[1]
    steps = [Step(0, 600, lambda: ProxyCut(broker, toxiproxy=kafka_cluster.toxiproxy, timeline=timeline), "cut"),
             Step(0, 600, lambda: BrokerFreeze(broker, timeline=timeline), "freeze")]
    nemesis = Nemesis(steps, log=lambda m: None).start()
    try:
        wait_until(lambda: len(nemesis.active()) == 2, 10, interval_s=0.1)
        assert len(nemesis.active()) == 2
    finally:
        nemesis.heal_all()
    assert status(broker) == "running"
    assert kafka_cluster.toxiproxy.proxies()[broker.proxy("client")]["enabled"] is True
    rows = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert all(r["healed_at_ms"] is not None for r in rows) and len(rows) == 2
