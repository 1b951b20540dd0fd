"""The scenario's `state` block (issue 54): what it sets up, and what a stateful run refuses, each with one line naming
the field (exit 2, nothing started)."""
import pytest

from harness.cli import main
from validate_cli import refused as refused_by_validate
from harness.scenario import CHANGELOG_CONFIGS, parse_scenario
from harness.state import key_space, state_config
from workloads.config import KeySpace, MemberConfig, StateConfig, decode_text, encode, ENV_VAR

STATE = "state: {keys_per_partition: 10}\n"


def refused(tmp_path, capsys, yaml_text: str) -> str:
    return refused_by_validate(tmp_path, capsys, STATE + yaml_text)


@pytest.mark.parametrize("yaml_text, words", [
    ("consumer_group: {client: java}\n", "consumer_group.client: the Java member (VerifiableConsumer) keeps no state; "
                                         "use client: java-member or streams or librdkafka"),
    ("consumer_group: {commit: auto}\n", "consumer_group.commit: auto has no commit point to flush the changelog before"),
    ("consumer_group: {commit: before_process}\n", "consumer_group.commit: before_process has no commit point"),
    ("consumer_group: {members: [{count: 1}, {count: 1, commit: auto}]}\n", "consumer_group.members[1].commit: auto"),
    ("consumer_group: {pattern: 'ch.*'}\n", "consumer_group.pattern: with state, the members subscribe to the one topic"),
    ("consumer_group: {topics: [chaos]}\n", "consumer_group.topics: with state, the members subscribe to the one topic"),
    ("topics: [{name: a}, {name: b}]\n", "topics: with state, a run has one input topic"),
    ("faults: [{kind: partitions_add, target: topic, at_s: 5, duration_s: 1, partitions: 12}]\n",
     "faults[0].kind: partitions_add cannot run with state"),
    ("faults: [{kind: topic_create, target: other, at_s: 5, duration_s: 1}]\n",
     "faults[0].kind: topic_create cannot run with state"),
    ("state: {keys_per_partition: 0}\n", "state.keys_per_partition"),
])
def test_a_stateful_run_refuses_what_would_break_its_keys_or_its_changelog(tmp_path, capsys, yaml_text, words):
    if yaml_text.startswith("state:"):
        path = tmp_path / "s.yaml"
        path.write_text(yaml_text)
        assert main(["validate", str(path)]) == 2
        assert words in capsys.readouterr().err
        return
    assert words in refused(tmp_path, capsys, yaml_text)


def test_the_changelog_has_the_topics_partitions_and_is_compacted_and_counted_in_the_replicas():
    scenario = parse_scenario({"topic": {"name": "orders", "partitions": 4, "replication_factor": 2},
                               "state": {"keys_per_partition": 7, "keep_on_revoke": True}})
    changelog = scenario.changelog
    assert (changelog.name, changelog.partitions, changelog.replication_factor) == ("orders-changelog", 4, 2)
    assert [t.name for t in scenario.created_topics()] == ["orders", "orders-changelog"]
    assert CHANGELOG_CONFIGS == {"cleanup.policy": "compact", "segment.ms": "10000"}
    assert state_config(scenario) == StateConfig("orders-changelog", KeySpace(7, 4), keep_on_revoke=True)
    assert parse_scenario({}).changelog is None and key_space(parse_scenario({})) is None
    # the changelog's replicas count against a broker's bound: 9,000 partitions at RF 3 on 3 brokers fit alone, not with it
    with pytest.raises(Exception, match="partition replicas a broker"):
        parse_scenario({"topic": {"partitions": 9000, "replication_factor": 3}, "state": {}})
    parse_scenario({"topic": {"partitions": 9000, "replication_factor": 3}})


def test_a_key_lives_in_one_partition_and_each_partition_holds_its_keys():
    keys = KeySpace(keys_per_partition=3, partitions=4)
    assert keys.keys == 12
    assert [keys.key_of(seq) for seq in (0, 1, 5, 12, 13)] == [("k0", 0), ("k1", 1), ("k5", 1), ("k0", 0), ("k1", 1)]
    assert keys.keys_of(1) == ["k1", "k5", "k9"]
    assert all(keys.key_of(int(k[1:]))[1] == p for p in range(4) for k in keys.keys_of(p))


def test_a_members_state_config_survives_the_environment(monkeypatch):
    cfg = StateConfig("t-changelog", KeySpace(5, 2), keep_on_revoke=False)
    fields = dict(member="member-1", run_dir="/r", client="librdkafka", release={}, bootstrap_servers="b:1",
                  group_id="g", topics=["t"], pattern=None, metadata_refresh_ms=None, protocol="classic",
                  assignor="range", remote_assignor=None, session_timeout_ms=10000, heartbeat_interval_ms=1000,
                  max_poll_interval_ms=300000, commit="sync", auto_commit_interval_ms=None, processing={},
                  batch_size=500)
    from workloads.config import ClientRelease, ProcessingConfig
    member = MemberConfig(**{**fields, "release": ClientRelease(), "processing": ProcessingConfig()}, state=cfg)
    assert decode_text(MemberConfig, encode(member)[ENV_VAR]).state == cfg
    assert decode_text(MemberConfig, encode(MemberConfig(**{**fields, "release": ClientRelease(),
                                                            "processing": ProcessingConfig()}))[ENV_VAR]).state is None


def test_a_stateful_hosted_group_is_held_to_three_clients_a_member(tmp_path, capsys, monkeypatch):
    """A stateful member's changelog producer and restore consumer (measured: benchmarks/member_hosts.py --state) count
    against the host's open files: what fits stateless is refused stateful, naming the field."""
    from harness import hosting
    monkeypatch.setattr(hosting, "fd_limit", lambda: 5000)
    group = "consumer_group: {members: 100, members_per_host: 100}\n"
    parse_scenario({"consumer_group": {"members": 100, "members_per_host": 100}})
    assert "consumer_group.members_per_host: 100 stateful members in one process need about" in \
        refused(tmp_path, capsys, group)
