"""The typed workload configs cross the process boundary whole: what the harness builds is what the
member process gets, nested types included."""
from dataclasses import replace

import pytest
import yaml

from harness.plan import compile_plan
from harness.run import member_config, producer_config
from harness.scenario import parse_scenario
from workloads import config as workload_config
from workloads.config import ClientRelease, MemberConfig, ProcessingConfig, ProducerConfig
from workloads.java_member import client_properties, command_line
from workloads.app import consumer_settings, subscription

SCENARIO = """
name: typed
topics: [{name: orders, partitions: 6}, {name: payments, partitions: 3}]
consumer_group:
  members: 2
  static_membership: true
  commit: auto
  auto_commit_interval_ms: 1000
  processing: {per_batch_ms: 5, distribution: exponential, seed: 7}
  config: {fetch.min.bytes: 1}
"""


def decoded(config, cls, monkeypatch):
    for name, value in workload_config.encode(config).items():
        monkeypatch.setenv(name, value)
    return workload_config.decode(cls)


def test_a_member_config_round_trips_with_its_nested_types(tmp_path, monkeypatch):
    plan = load_plan_text(SCENARIO)
    config = member_config(plan, plan.members[1].settings, ClientRelease(python="/venv/bin/python", client_version="2.9.0",
                                                         librdkafka_version="2.8.0"),
                           member="member-2", run_dir=tmp_path, bootstrap="127.0.0.1:1", instance_id="instance-2")
    back = decoded(config, MemberConfig, monkeypatch)
    assert back == config
    assert isinstance(back.release, ClientRelease) and isinstance(back.processing, ProcessingConfig)
    assert back.processing.distribution == "exponential" and back.topics == ["orders", "payments"]


def test_the_librdkafka_member_turns_its_config_into_client_settings(tmp_path):
    plan = load_plan_text(SCENARIO)
    config = member_config(plan, plan.members[0].settings, ClientRelease(), member="member-1",
                           run_dir=tmp_path, bootstrap="127.0.0.1:1", instance_id="instance-1")
    settings = consumer_settings(config)
    assert settings["group.instance.id"] == "instance-1" and settings["enable.auto.commit"] is True
    assert settings["auto.commit.interval.ms"] == 1000 and settings["fetch.min.bytes"] == 1
    assert subscription(config) == ["orders", "payments"]


def test_a_member_subscribes_to_its_own_topics_when_its_spec_names_them(tmp_path, monkeypatch):
    plan = load_plan_text(SCENARIO.replace("  members: 2\n", "  members: [{topics: [payments]}, {count: 1}]\n"))
    own, every = (member_config(plan, member.settings, ClientRelease(), member=member.name, run_dir=tmp_path,
                                bootstrap="127.0.0.1:1", instance_id=None)
                  for member in plan.members)
    assert subscription(own) == ["payments"] and subscription(every) == ["orders", "payments"]
    assert decoded(own, MemberConfig, monkeypatch) == own and own.topics == ["orders", "payments"]


def test_the_java_member_turns_its_config_into_a_command_line(tmp_path):
    plan = load_plan_text(SCENARIO.replace("topics: [{name: orders, partitions: 6}, {name: payments, partitions: 3}]",
                                                   "topic: {name: orders, partitions: 6}")
                                  .replace("  processing: {per_batch_ms: 5, distribution: exponential, seed: 7}\n", "")
                                  + "  client: java\n")
    release = ClientRelease(classpath="/jars/*", config_option="--consumer.config", group_protocol_option=False)
    config = member_config(plan, plan.members[0].settings, release, member="member-1",
                           run_dir=tmp_path, bootstrap="127.0.0.1:1", instance_id=None)
    line = command_line(config, tmp_path / "p.properties")
    assert line[line.index("-cp") + 1] == "/jars/*" and "--consumer.config" in line
    assert "--group-protocol" not in line and "--enable-autocommit" in line
    assert "auto.commit.interval.ms=1000" in client_properties(config)
    assert line[line.index("--bootstrap-server") + 1] == "127.0.0.1:1"
    old = member_config(plan, plan.members[0].settings,
                        ClientRelease(classpath="/jars/*", bootstrap_option="--broker-list"), member="member-1",
                        run_dir=tmp_path, bootstrap="127.0.0.1:1", instance_id=None)
    line = command_line(old, tmp_path / "p.properties")  # VerifiableConsumer before 2.6 (KIP-499)
    assert line[line.index("--broker-list") + 1] == "127.0.0.1:1" and "--bootstrap-server" not in line
    assert "--group-instance-id" not in line
    dynamic = ClientRelease(classpath="/jars/*", bootstrap_option="--broker-list", dynamic_instance_id="None")
    line = command_line(replace(old, release=dynamic), tmp_path / "p.properties")  # 2.3 and 2.4 require the option
    assert line[line.index("--group-instance-id") + 1] == "None"


def test_a_producer_config_round_trips(tmp_path, monkeypatch):
    config = producer_config(load_plan_text(SCENARIO), tmp_path, "127.0.0.1:1")
    assert decoded(config, ProducerConfig, monkeypatch) == config


def test_a_workload_started_by_hand_is_told_why_it_cannot_run(monkeypatch):
    monkeypatch.delenv(workload_config.ENV_VAR, raising=False)
    with pytest.raises(SystemExit, match="started by the kafka-chaos harness"):
        workload_config.decode(MemberConfig)


def load_plan_text(text: str):
    return compile_plan(parse_scenario(yaml.safe_load(text)), offline=True)
