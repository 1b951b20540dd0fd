"""The producer's log row for each delivery report (workloads/producer.py): an ack without an offset (seen from
librdkafka 2.16.0 on partitions just added) is `unplaced` (its partition, no offset), never an `ok` row the contract
cannot place."""
from analysis.api import contract
from workloads.producer import UNPLACED_ACK, SequencedProducer


class Report:
    """A delivery report's message, as confluent-kafka hands it to the callback."""
    def __init__(self, partition, offset):
        self._partition, self._offset = partition, offset

    def key(self):
        return b"7"

    def value(self):
        return b"p:7"  # workloads/producer.py record_value: the callback reads seq from here (a stateful run's key is not it)

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


def delivered(offset) -> tuple[dict, dict]:
    """The row the producer logs for a delivery report with this offset and no error, and its counts after it."""
    producer = SequencedProducer.__new__(SequencedProducer)  # the callback alone: no client, no file
    producer.pending, producer.counts, producer.log, producer.producer_id = {7: "chaos"}, {"ok": 0, "info": 0, "fail": 0, "unplaced": 0}, Log(), "p"
    producer._on_delivery(None, Report(427, offset))
    [row] = producer.log.rows
    contract.check_object("produced", row, "produced/p.jsonl:1")
    return row, producer.counts


def test_an_ack_with_an_offset_is_ok():
    row, counts = delivered(3)
    assert row["status"] == "ok" and counts["ok"] == 1


def test_an_ack_without_an_offset_is_unplaced_and_says_so():
    row, counts = delivered(None)
    assert row["status"] == "unplaced" and row["partition"] == 427 and row["offset"] is None and row["error"] == UNPLACED_ACK
    assert counts == {"ok": 0, "info": 0, "fail": 0, "unplaced": 1}
