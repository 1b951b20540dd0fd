"""The describing child (harness/group.py) says why it has no answer: a run that times out waiting for its group names
the Kafka error, not only "null"."""
import socket

from harness.group import GroupDescriber


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_describe_that_fails_says_why():
    describer = GroupDescriber(f"127.0.0.1:{_closed_port()}")
    try:
        assert describer.describe("g") is None
        assert describer.last_error and describer.last_error.startswith("describe_consumer_groups failed"), describer.last_error
    finally:
        describer.close()
