"""cluster.kafka_version: brokers of another Kafka release, refused before anything starts when they cannot work."""
import docker
import pytest

from harness.releases.kafka_release import KafkaVersionError, ensure_kafka_image
from harness.run import run_scenario
from harness.scenario import ScenarioError, parse_scenario


@pytest.mark.parametrize("cluster, group, words", [
    ({"kafka_version": "3.6.2"}, {}, "cluster.kafka_version: Kafka 3.6.2 is older than 3.7"),
    ({"kafka_version": "3.9"}, {}, "cluster.kafka_version: String should match pattern"),
    ({"kafka_version": "3.9.1"}, {"protocol": "consumer"}, "consumer_group.protocol: the consumer protocol (KIP-848)"),
])
def test_a_release_the_harness_cannot_run_is_one_error_naming_the_field(cluster, group, words):
    with pytest.raises(ScenarioError) as error:
        parse_scenario({"cluster": cluster, "consumer_group": group})
    assert f"scenario: {words}" in str(error.value), str(error.value)


def test_a_release_maven_central_does_not_have_is_refused_before_a_cluster_starts(tmp_path):
    """3.7.9 never existed: the image build asks Maven Central (with the machine's own Maven settings)."""
    with pytest.raises(KafkaVersionError, match="Kafka 3.7.9 is not a release on Maven Central"):
        ensure_kafka_image("3.7.9", log=lambda *_: None)
    before = {c.id for c in docker.from_env().containers.list(all=True)}
    with pytest.raises(ScenarioError, match=r"^cluster\.kafka_version: Kafka 3\.7\.9 is not a release"):
        run_scenario(parse_scenario({"cluster": {"kafka_version": "3.7.9"}}), tmp_path / "runs")
    assert {c.id for c in docker.from_env().containers.list(all=True)} == before, "something was started"
