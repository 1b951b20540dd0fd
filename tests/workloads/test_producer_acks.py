"""The producer's log row for each delivery report (workloads/producer.py): an ack without an offset (seen from
librdkafka 2.16.0 on partitions just added) is `info`, never an `ok` row the contract cannot place."""
from analysis import contract
from workloads.producer import UNPLACED_ACK, SequencedProducer


class Report:
    """A delivery report's message, as confluent-kafka hands it to the callback."""
    def __init__(self, partition, offset):
        self._partition, self._offset = partition, offset

    def key(self):
        return b"7"

    def topic(self):
        return "chaos"

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset


class Log:
    def __init__(self):
        self.rows = []

    def append(self, row):
        self.rows.append(row)


def delivered(offset) -> dict:
    producer = SequencedProducer.__new__(SequencedProducer)  # the callback alone: no client, no file
    producer.pending, producer.counts, producer.log, producer.producer_id = {7: "chaos"}, {"ok": 0, "info": 0, "fail": 0}, Log(), "p"
    producer._on_delivery(None, Report(427, offset))
    [row] = producer.log.rows
    contract.check_object("produced", row, "produced/p.jsonl:1")
    return row


def test_an_ack_with_an_offset_is_ok():
    assert delivered(3)["status"] == "ok"


def test_an_ack_without_an_offset_is_info_and_says_so():
    row = delivered(None)
    assert row["status"] == "info" and row["offset"] is None and row["error"] == UNPLACED_ACK
