"""How a member names the error it exits on (issue 22): the Kafka error name, also when librdkafka wraps the
reason in a _FATAL error; the group request, when librdkafka's text names it; the release that ran."""
import confluent_kafka
import pytest
from confluent_kafka import KafkaError

from workloads.history import FENCING
from workloads.app import is_fatal, package_version
from workloads.member import error_name, named_request

FENCED_TEXT = "Fatal error: Broker: Static consumer fenced by other consumer with same group.instance.id"
UNRELEASED_TEXT = "Fatal error: Broker: The instance ID is still used by another member in the consumer group"


@pytest.mark.parametrize("error, name", [
    (KafkaError(KafkaError.FENCED_INSTANCE_ID), "FENCED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, f"{FENCED_TEXT}: Fatal consumer error: Broker: Static consumer fenced"), "FENCED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, f"{UNRELEASED_TEXT}: ConsumerGroupHeartbeat fatal error"), "UNRELEASED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, "Fatal error: something else"), "_FATAL"),
    (KafkaError(KafkaError._TRANSPORT, "Static consumer fenced by other consumer with same group.instance.id"), "_TRANSPORT"),
    (KafkaError(KafkaError._FATAL, "Fatal error: Broker: Invalid request: ConsumerGroupHeartbeat fatal error"), "INVALID_REQUEST"),
])
def test_the_error_is_named_by_its_code(error, name):
    assert error_name(error) == name


def test_fencing_names_are_kafka_error_names():
    assert all(KafkaError(getattr(KafkaError, name)).name() == name for name in FENCING)


@pytest.mark.parametrize("text, api", [
    (f"{UNRELEASED_TEXT}: ConsumerGroupHeartbeat fatal error: Broker: ...", "ConsumerGroupHeartbeat"),
    (f"{FENCED_TEXT}: OffsetCommit failed: Broker: Static consumer fenced", "OffsetCommit"),
    (f"{FENCED_TEXT}: Fatal consumer error: Broker: Static consumer fenced", None),
    ("Fatal error: Broker: x: Bogus fatal error", None),
])
def test_the_request_is_the_one_librdkafka_names(text, api):
    assert named_request(KafkaError(KafkaError._FATAL, text)) == api


def test_fatal_is_the_flag_or_a_fatal_message():
    assert is_fatal(KafkaError(KafkaError._FATAL, "x"))
    assert is_fatal(KafkaError(KafkaError.FENCED_INSTANCE_ID, "x", fatal=True))
    assert not is_fatal(KafkaError(KafkaError.ILLEGAL_GENERATION))


def test_client_version_is_the_whole_release():
    """Issue 22: confluent_kafka.version() became a plain string in 2.16; its first character is no version."""
    assert package_version() == confluent_kafka.__version__ and package_version().count(".") == 2
