"""Pinned client releases: a release that cannot run here is one error naming the field, before anything starts."""
import pytest

from harness.client_versions import ClientVersionError, check_java_version, check_librdkafka_version, librdkafka_client
from harness.run import resolve_clients
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
