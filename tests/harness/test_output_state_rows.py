"""A stateful program's output records (harness/output_topic.py): each names its input record in headers and the
change it applied in its JSON value, which the harness makes a consumed row (producer_id and seq too) and a state
row of; a value that does not name a whole change is unread, with why."""
import json

from harness.output_topic import input_row, state_row
from harness.scenario.schema import OutputSpec


class Message:
    def __init__(self, headers, value, key=b"k7", timestamp=1_000):
        self._headers, self._value, self._key, self._ts = headers, value, key, timestamp

    def headers(self):
        return self._headers

    def value(self):
        return self._value

    def key(self):
        return self._key

    def timestamp(self):
        return (1, self._ts)


HEADERS = [("in-topic", b"chaos"), ("in-partition", b"1"), ("in-offset", b"500"), ("in-member", b"member-2"),
           ("in-producer-id", b"producer-1"), ("in-seq", b"3001")]
CHANGE = {"count": 3, "sum": 9000, "last_offset": 500, "prev_offset": 400, "member": "member-2", "ts_ms": 2_000}


def test_an_output_record_gives_its_consumed_row_and_the_change_it_applied():
    m = Message(HEADERS, json.dumps(CHANGE).encode())
    row, why = input_row(m, OutputSpec(topic="streams-totals"))
    assert why is None and (row["partition"], row["offset"], row["member"], row["producer_id"], row["seq"]) == \
        (1, 500, "member-2", "producer-1", 3001)
    change, why = state_row(m, row)
    assert why is None and change == {"ts_ms": 2_000, "member": "member-2", "topic": "chaos", "partition": 1,
                                      "key": "k7", "offset": 500, "prev_offset": 400, "count": 3, "sum": 9000,
                                      "generation": None}


def test_a_value_that_names_no_whole_change_is_unread_with_why():
    row, _ = input_row(Message(HEADERS, b""), OutputSpec(topic="streams-totals"))
    for value, words in ((b"not json", "not JSON"), (json.dumps({**CHANGE, "sum": None}).encode(), "not an integer"),
                         (json.dumps({k: v for k, v in CHANGE.items() if k != "prev_offset"}).encode(), "prev_offset"),
                         (json.dumps({**CHANGE, "last_offset": 499}).encode(), "not the input record's offset")):
        change, why = state_row(Message(HEADERS, value), row)
        assert change is None and words in why, (value, why)


def test_a_record_without_its_producer_id_keeps_none():
    row, _ = input_row(Message(HEADERS[:4], b"{}"), OutputSpec(topic="streams-totals"))
    assert "producer_id" not in row and "seq" not in row


def test_a_record_that_names_when_it_was_processed_is_consumed_then_and_orders_its_members_rows(tmp_path, monkeypatch):
    """A Streams program's output (ChaosStreams.inputHeaders names in-processed-at): its consumed row's time is the
    processing time, not the output record's timestamp (Streams keeps the input's), and a member's rows read one
    output partition at a time come out in processing order; without the header, in the topic's order."""
    from harness import output_topic
    late, early = (Message(HEADERS[:3] + [("in-member", b"member-1"), ("in-processed-at", str(t).encode())], b"",
                           timestamp=1_000) for t in (5_000, 4_000))
    row, _ = input_row(late, OutputSpec(topic="numbered"))
    assert row["consumed_at_ms"] == 5_000 and row["processed"]
    early_row = {**input_row(early, OutputSpec(topic="numbered"))[0], "offset": 501}
    monkeypatch.setattr(output_topic, "_read_topic", lambda *a: ([row, early_row], [], {}))
    monkeypatch.setattr(output_topic, "final_commits", lambda *a: {})
    output_topic.read_back(tmp_path, "b", OutputSpec(topic="numbered"), "g", {"chaos": 6})
    rows = [json.loads(line) for line in (tmp_path / "consumed" / "member-1.jsonl").read_text().splitlines()]
    assert [(r["offset"], r["consumed_at_ms"]) for r in rows] == [(501, 4_000), (500, 5_000)]
    assert "processed" not in rows[0]
    plain, _ = input_row(Message(HEADERS, b""), OutputSpec(topic="numbered"))
    assert plain["consumed_at_ms"] == 1_000 and not plain["processed"]
