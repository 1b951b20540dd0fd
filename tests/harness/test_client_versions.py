"""Pinned client releases: a release that cannot run here is one error naming the field, before anything starts."""
import pytest

from harness.plan import resolve_clients
from harness.releases.client_versions import ClientVersionError, check_java_version, check_librdkafka_version, librdkafka_client
from harness.scenario import ScenarioError, parse_scenario


@pytest.mark.parametrize("check, version, words", [
    (check_java_version, "2.0.1", "KIP-896"),
    (check_librdkafka_version, "1.9.2", "no wheel"),
    (check_java_version, "3.x", "not a release number"),
])
def test_a_release_too_old_or_malformed_is_refused_without_a_download(check, version, words):
    with pytest.raises(ClientVersionError, match=words):
        check(version)


def test_a_release_the_registry_does_not_have_is_one_error():
    """Asks the machine's package registry (pip's own configuration): confluent-kafka 2.0.99 never existed."""
    with pytest.raises(ClientVersionError, match="no such release"):
        librdkafka_client("2.0.99", log=lambda *_: None)


def test_the_error_names_the_member_spec_field_before_the_cluster_starts():
    scenario = parse_scenario({"consumer_group": {"members": [{"count": 2}, {"count": 1, "version": "1.9.2"}]}})
    with pytest.raises(ScenarioError, match=r"^consumer_group\.members\[1\]\.version: confluent-kafka 1\.9\.2"):
        resolve_clients(scenario)


def test_a_java_release_without_kip848_is_refused_for_the_consumer_protocol():
    """VerifiableConsumer 3.2.0 (from Maven Central, cached) has no --group-protocol: one error, before the cluster."""
    scenario = parse_scenario({"consumer_group": {"client": "java", "protocol": "consumer", "version": "3.2.0"}})
    with pytest.raises(ScenarioError, match=r"^consumer_group\.version: VerifiableConsumer 3\.2\.0 has no --group-protocol"):
        resolve_clients(scenario)


def test_a_java_release_without_static_membership_is_refused_for_it():
    """VerifiableConsumer 2.2.1 has no --group-instance-id (KIP-345 came in 2.3): one error naming the field."""
    scenario = parse_scenario({"consumer_group": {"client": "java", "static_membership": True, "version": "2.2.1"}})
    with pytest.raises(ScenarioError, match=r"^consumer_group\.static_membership: VerifiableConsumer 2\.2\.1 has no "
                                            r"--group-instance-id"):
        resolve_clients(scenario)


@pytest.mark.parametrize("version, options, bootstrap, dynamic", [
    ("2.2.1", {"--broker-list"}, "--broker-list", None),
    ("2.3.0", {"--broker-list", "--group-instance-id"}, "--broker-list", "None"),  # required there: "None" is dynamic
    ("2.5.0", {"--broker-list", "--bootstrap-server", "--group-instance-id"}, "--bootstrap-server", None),
    ("3.9.1", {"--bootstrap-server", "--group-instance-id", "--group-protocol"}, "--bootstrap-server", None),
])
def test_old_verifiable_consumers_get_the_options_they_know(version, options, bootstrap, dynamic):
    from harness.releases.client_versions import JavaClient
    client = JavaClient(version, "/jars/*", frozenset(options))
    assert (client.bootstrap_option, client.dynamic_instance_id) == (bootstrap, dynamic)
