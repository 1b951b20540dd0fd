"""A Kafka Streams group in a scenario file (issue 55): what it sets up, and each bad input refused with one line that
names the field, exit 2, before anything starts (tried as a new user would, through `kafka-chaos validate`)."""
from pathlib import Path

import pytest

from harness.scenario import load_scenario, parse_scenario, read_yaml
from harness.streams import STANDBYS_GROUP_CONFIG, group_configs, streams_settings
from validate_cli import refused
from workloads.config import MemberConfig, decode_text, encode, ENV_VAR

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("yaml_text, words", [
    ("consumer_group: {client: streams, protocol: streams}\ncluster: {kafka_version: 4.1.1}\n",
     "consumer_group.protocol: the streams protocol (KIP-1071) is on by default from Kafka 4.2; the brokers run 4.1.1"),
    ("consumer_group: {client: streams, protocol: streams, static_membership: true}\n",
     "consumer_group.static_membership: the streams protocol has it from Kafka 4.4; the brokers run 4.3.1"),
    ("consumer_group: {client: streams, protocol: streams, streams: {warmup: {}}}\n",
     "consumer_group.streams.warmup: the streams protocol has it from Kafka 4.4"),
    ("consumer_group: {client: streams, protocol: streams, streams: {standby_replicas: 3}}\n",
     "streams.standby_replicas: at most 2 under protocol: streams (the brokers' group.streams.max.standby.replicas)"),
    ("consumer_group: {client: streams, protocol: consumer}\n",
     "protocol: the Kafka Streams member speaks classic or streams, not consumer"),
    ("consumer_group: {client: librdkafka, protocol: streams}\n",
     "protocol: the librdkafka member speaks classic or consumer, not streams; use client: command or streams"),
    ("consumer_group: {client: java-member, streams: {guarantee: exactly_once_v2}}\n",
     "streams: only for client: streams or a command member (your Streams program)"),
    ("consumer_group: {client: streams, commit: sync}\n", "commit: the Kafka Streams member commits on its own"),
    ("consumer_group: {client: streams, assignor: cooperative-sticky}\n",
     "assignor: the Kafka Streams member assigns with its own assignor"),
    ("consumer_group: {client: streams, output: {topic: mine}}\n",
     "output: the Kafka Streams member writes its own output topic (chaos-group-output)"),
    ("consumer_group: {client: streams, protocol: streams, session_timeout_ms: 6000}\n",
     "session_timeout_ms: not allowed with protocol: streams (the broker sets it)"),
    ("consumer_group: {client: streams, streams: {guarantee: exactly_once}}\n", "consumer_group.streams.guarantee"),
    ("consumer_group: {client: streams}\nstate: {keep_on_revoke: true}\n",
     "state.keep_on_revoke: the Kafka Streams member keeps its state in its own store"),
    ("consumer_group: {client: streams}\ntopics: [{name: a}, {name: b}]\n", "topics:"),
])
def test_a_streams_group_refuses_what_cannot_work(tmp_path, capsys, yaml_text, words):
    assert words in refused(tmp_path, capsys, yaml_text)


def test_a_streams_group_gets_its_output_topic_its_state_and_its_settings():
    scenario = parse_scenario({"consumer_group": {"client": "streams", "protocol": "streams", "members": 3,
                                                  "streams": {"guarantee": "exactly_once_v2", "standby_replicas": 1}}})
    group = scenario.consumer_group
    assert group.output.topic == "chaos-group-output" and group.output.isolation == "read_committed"
    assert group.commit == "interval" and group.effective().assignor is None
    assert scenario.state is not None  # a Streams member always keeps state: the producer writes keys
    assert scenario.changelog.name == "chaos-group-totals-changelog" and scenario.created_changelog is None
    assert [t.name for t in scenario.created_topics()] == ["chaos"]  # Streams creates its internal topics
    assert group_configs(group) == {STANDBYS_GROUP_CONFIG: "1"}
    settings = streams_settings(group, "streams")
    assert (settings.guarantee, settings.standby_replicas, settings.threads, settings.warmup) == \
        ("exactly_once_v2", 1, 1, None)
    assert streams_settings(group, "librdkafka") is None
    again = parse_scenario(scenario.settings())  # a scenario's own dump validates again (the plan does it)
    assert again.consumer_group.output == group.output


def test_the_streams_settings_reach_the_member_as_the_java_side_reads_them():
    scenario = parse_scenario({"consumer_group": {"client": "streams", "streams": {
        "warmup": {"max_warmup_replicas": 1, "acceptable_recovery_lag": 10_000,
                   "probing_rebalance_interval_ms": 60_000}}}})
    settings = streams_settings(scenario.consumer_group, "streams")
    assert settings.warmup.acceptable_recovery_lag == 10_000
    cfg = decode_text(MemberConfig, encode(_member_config(settings))[ENV_VAR])
    assert cfg.streams == settings


def test_a_command_member_is_a_streams_program_when_the_group_says_so():
    """Your own Streams program (examples/streams) is a command member: the `streams` block or protocol: streams
    makes it one (it gets the settings, the group its standbys); a command member otherwise gets none."""
    command = {"count": 3, "command": ["{python}", "-m", "workloads.java_app", "examples/streams", "{output_topic}"]}
    output = {"topic": "numbered", "source": "headers", "isolation": "read_committed"}
    scenario = parse_scenario({"consumer_group": {"protocol": "streams", "members": [command], "output": output,
                                                  "streams": {"guarantee": "exactly_once_v2", "standby_replicas": 2}}})
    group = scenario.consumer_group
    assert streams_settings(group, "command").guarantee == "exactly_once_v2"
    assert group_configs(group) == {STANDBYS_GROUP_CONFIG: "2"}
    assert scenario.state is None  # your program's state is its own: judged from its output topic
    plain = parse_scenario({"consumer_group": {"members": [command], "output": output}}).consumer_group
    assert streams_settings(plain, "command") is None and group_configs(plain) == {}
    under_streams = parse_scenario({"consumer_group": {"protocol": "streams", "members": [command],
                                                       "output": output}}).consumer_group
    assert streams_settings(under_streams, "command").standby_replicas == 0


def test_the_example_streams_program_validates():
    for name in ("scenario.yaml", "classic.yaml"):
        path = ROOT / "examples" / "streams" / name
        scenario = load_scenario(path)
        assert streams_settings(scenario.consumer_group, "command") is not None, path


def test_the_scenario_files_validate():
    for path in (ROOT / "scenarios" / "streams").glob("*.yaml"):
        scenario = parse_scenario(read_yaml(path, "scenario"), str(path))
        assert scenario.consumer_group.client == "streams", path


def _member_config(settings) -> MemberConfig:
    from workloads.config import ClientRelease, ProcessingConfig
    return MemberConfig(member="member-1", run_dir="/tmp/x", client="streams", release=ClientRelease(),
                        bootstrap_servers="127.0.0.1:9092", group_id="g", topics=["chaos"], pattern=None,
                        metadata_refresh_ms=None, protocol="classic", assignor=None, remote_assignor=None,
                        session_timeout_ms=10_000, heartbeat_interval_ms=1_000, max_poll_interval_ms=300_000,
                        commit="interval", auto_commit_interval_ms=None, processing=ProcessingConfig(),
                        batch_size=500, output_topic="chaos-group-output", streams=settings)
