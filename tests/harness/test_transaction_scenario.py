"""`commit: transaction` in a scenario file (issue 56): what it sets up, and each bad input refused with one line that
names the field, exit 2, before anything starts (through `kafka-chaos validate`, as a new user runs it)."""
import pytest

from harness.run import transaction_settings
from harness.scenario import parse_scenario
from validate_cli import refused
from workloads.config import MemberConfig, TransactionSettings, decode_text, encode, ENV_VAR


@pytest.mark.parametrize("yaml_text, words", [
    ("consumer_group: {transaction: {interval_ms: 100}}\n",
     "consumer_group.transaction: only with commit: transaction (the group commits sync)"),
    ("consumer_group: {commit: transaction, transaction: {timeout_ms: 1000000}}\n",
     "consumer_group.transaction.timeout_ms: 1000000 is above the brokers' transaction.max.timeout.ms (900000)"),
    ("consumer_group: {commit: transaction, transaction: {timeout_ms: 120000}}\n"
     "cluster: {broker_config: {transaction.max.timeout.ms: 60000}}\n",
     "consumer_group.transaction.timeout_ms: 120000 is above the brokers' transaction.max.timeout.ms (60000)"),
    ("consumer_group: {commit: transaction, client: java}\n",
     "consumer_group.commit: the Java member (VerifiableConsumer) commits sync or auto only, not transaction; use "
     "client: java-member or librdkafka"),
    ("consumer_group: {commit: transaction, client: streams}\n",
     "consumer_group.commit: the Kafka Streams member commits interval only, not transaction"),
    ("consumer_group: {commit: transaction, output: {topic: mine}}\n",
     "consumer_group.output: a transactional member writes its own output topic (chaos-group-txn-out)"),
    ("consumer_group: {members: [{count: 2}, {commit: transaction}]}\n",
     "consumer_group.members[1].commit: commit: transaction is the whole group's"),
    ("consumer_group: {commit: transaction}\nstate: {keys_per_partition: 100}\n",
     "state: a stateful member commits with its changelog flushed first; commit: transaction keeps no state"),
    ("consumer_group: {commit: transaction, transaction: {interval_ms: 0}}\n", "consumer_group.transaction.interval_ms"),
    ("consumer_group: {commit: transaction, transaction: {readers: [read_uncommitted]}}\n",
     "consumer_group.transaction.readers: the read_committed reader is the one the exactly-once checks read"),
    ("consumer_group: {commit: transaction, transaction: {readers: [read_committed, read_committed]}}\n",
     "consumer_group.transaction.readers: one reader an isolation level"),
    ("consumer_group: {commit: transaction, transaction: {readers: [read_latest]}}\n",
     "consumer_group.transaction.readers"),
    ("cluster: {kafka_version: 3.9.1, transaction_version: 1}\nconsumer_group: {commit: transaction}\n",
     "cluster.transaction_version: transaction.version is a feature level from Kafka 4.0 (KIP-890); the brokers run "
     "3.9.1"),
    ("cluster: {transaction_version: 3}\n", "cluster.transaction_version"),
    ("consumer_group: {commit: transaction, transaction: {transactional_id: topic}}\n",
     "consumer_group.transaction.transactional_id"),
])
def test_a_transactional_group_refuses_what_cannot_work(tmp_path, capsys, yaml_text, words):
    assert words in refused(tmp_path, capsys, yaml_text)


def test_unique_names_keep_a_derived_output_topics_settings():
    """The zoo and the pytest plugin rename a run's group; the transactional output topic is named after the new id,
    with the replication factor the scenario gave it (it was dropped with the old name: KAFKA-16352's runs had three
    replicas where the file asked one)."""
    from harness.scenario.loading import parse_with_unique_names
    scenario = parse_with_unique_names({"consumer_group": {"commit": "transaction", "output": {
        "topic": "chaos-group-txn-out", "replication_factor": 1, "partitions": 4}}}, "s1", "test")
    output = scenario.consumer_group.output
    assert (output.topic, output.replication_factor, output.partitions) == ("chaos-group-s1-txn-out", 1, 4)


def test_a_transactional_group_gets_its_output_topic_and_its_settings():
    scenario = parse_scenario({"consumer_group": {"commit": "transaction", "group_id": "g",
                                                  "transaction": {"abort_every": 5}}})
    group = scenario.consumer_group
    assert (group.output.topic, group.output.isolation, group.output.source) == ("g-txn-out", "read_committed", "headers")
    assert transaction_settings(group, "transaction") == TransactionSettings(interval_ms=200, timeout_ms=60_000,
                                                                               abort_every=5)
    assert transaction_settings(group, "sync") is None
    assert group.transaction.readers == ["read_committed"]  # the verified reader the exactly-once checks read
    assert scenario.facts().producing  # rpc rules on Produce and the transactional requests have a sender
    again = parse_scenario(scenario.settings())  # a scenario's own dump validates again (the plan does it)
    assert again.consumer_group.transaction == group.transaction and again.consumer_group.output == group.output


def test_the_transaction_settings_reach_the_member():
    from workloads.config import ClientRelease, ProcessingConfig
    cfg = MemberConfig(member="member-1", run_dir="/tmp/x", client="librdkafka", release=ClientRelease(),
                       bootstrap_servers="127.0.0.1:9092", group_id="g", topics=["chaos"], pattern=None,
                       metadata_refresh_ms=None, protocol="classic", assignor="range", remote_assignor=None,
                       session_timeout_ms=10_000, heartbeat_interval_ms=1_000, max_poll_interval_ms=300_000,
                       commit="transaction", auto_commit_interval_ms=None, processing=ProcessingConfig(),
                       batch_size=500, output_topic="g-txn-out", transaction=TransactionSettings(300, 30_000, 2))
    assert decode_text(MemberConfig, encode(cfg)[ENV_VAR]).transaction == TransactionSettings(300, 30_000, 2)


def test_an_rpc_rule_on_a_transactional_request_has_a_sender_in_a_transactional_group():
    fault = {"kind": "rpc", "target": "member-1", "api": "EndTxn", "action": "delay", "delay_ms": 500, "at_s": 1,
             "duration_s": 2}
    parse_scenario({"consumer_group": {"commit": "transaction"}, "faults": [fault]})
    with pytest.raises(Exception, match="EndTxn"):
        parse_scenario({"consumer_group": {"commit": "sync"}, "faults": [fault]})
