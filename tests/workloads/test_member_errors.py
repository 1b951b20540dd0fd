"""How a member names the error it exits on: a duplicated group.instance.id is `fenced`, under either protocol,
also when librdkafka wraps the reason in a _FATAL error."""
import pytest
from confluent_kafka import KafkaError

from workloads.member import fencing


@pytest.mark.parametrize("error, code", [
    (KafkaError(KafkaError.FENCED_INSTANCE_ID), "FENCED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, "Fatal error: Broker: Static consumer fenced by other consumer with same "
                                   "group.instance.id: OffsetCommit failed"), "FENCED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, "Fatal error: Broker: The instance ID is still used by another member in the "
                                   "consumer group: ConsumerGroupHeartbeat fatal error"), "UNRELEASED_INSTANCE_ID"),
    (KafkaError(KafkaError._FATAL, "Fatal error: something else"), None),
    (KafkaError(KafkaError._TRANSPORT, "Static consumer fenced by other consumer with same group.instance.id"), None),
])
def test_fencing_is_named_by_its_code(error, code):
    assert fencing(error) == code
