"""VerifiableConsumer's events become contract rows; a cut-short last line (a killed JVM) is skipped."""
import json

from workloads.verifiable import convert

RAW = [
    {"timestamp": 100, "name": "startup_complete"},
    {"timestamp": 110, "name": "partitions_assigned", "partitions": [{"topic": "t", "partition": 0}]},
    {"timestamp": 120, "name": "record_data", "key": "7", "value": "producer-1:7", "topic": "t", "partition": 0, "offset": 0},
    {"timestamp": 121, "name": "records_consumed", "count": 1, "partitions": []},
    {"timestamp": 130, "name": "offsets_committed", "offsets": [{"topic": "t", "partition": 0, "offset": 1}], "success": True},
    {"timestamp": 140, "name": "offsets_committed", "offsets": [{"topic": "t", "partition": 0, "offset": 1}],
     "success": False, "error": "rebalanced"},
    {"timestamp": 150, "name": "partitions_revoked", "partitions": [{"topic": "t", "partition": 0}]},
    {"timestamp": 160, "name": "shutdown_complete"},
]


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_convert_writes_the_contract(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(e) + "\n" for e in RAW) + '{"timestamp": 170, "name": "record_da')
    assert convert(raw, tmp_path, "member-1", "instance-1") == (1, 6)
    [row] = lines(tmp_path / "consumed" / "member-1.jsonl")
    assert row == {"topic": "t", "partition": 0, "offset": 0, "member": "member-1", "consumed_at_ms": 120, "key": "7",
                   "producer_id": "producer-1", "seq": 7, "instance_id": "instance-1", "generation": -1, "client": "java",
                   "n": 0}
    events = lines(tmp_path / "events" / "member-1.jsonl")
    assert [e["kind"] for e in events] == ["started", "assigned", "committed", "commit_failed", "revoked", "stopped"]
    assert events[2]["offsets"] == {"t:0": 1} and events[2]["requested_at_ms"] == 121
    assert events[3]["detail"] == "rebalanced" and events[1]["partitions"] == ["t:0"]


def test_missing_raw_file_gives_empty_logs(tmp_path):
    assert convert(tmp_path / "none.jsonl", tmp_path, "member-9", None) == (0, 0)


def test_started_event_carries_typed_facts(tmp_path):
    """Issue 8: the client, group protocol, assignor and instance id are fields of `started`, not free text.
    java_member.py writes them into the raw file before the JVM starts; the converter moves them."""
    from workloads.verifiable import FACTS_EVENT
    raw = tmp_path / "raw.jsonl"
    facts = {"name": FACTS_EVENT, "timestamp": 90, "protocol": "classic", "assignor": "cooperative-sticky",
             "instance_id": "instance-1"}
    raw.write_text("".join(json.dumps(e) + "\n" for e in [facts] + RAW))
    assert convert(raw, tmp_path, "member-1", "instance-1") == (1, 6)
    started = lines(tmp_path / "events" / "member-1.jsonl")[0]
    assert {k: started[k] for k in ("kind", "client", "protocol", "assignor", "instance_id")} == \
        {"kind": "started", "client": "java", "protocol": "classic", "assignor": "cooperative-sticky",
         "instance_id": "instance-1"}


def test_the_live_converter_follows_the_raw_file_and_a_new_one_rewrites_without_duplicates(tmp_path):
    """java_member.py converts while the JVM prints: only whole lines count until close(); a converter that
    starts again over the same raw file (a restarted member, the harness's final pass) writes each row once."""
    from workloads.verifiable import Converter
    raw = tmp_path / "raw.jsonl"
    text = "".join(json.dumps(e) + "\n" for e in RAW)
    cut = text.index('"name": "records_consumed"') - 5  # inside the line after the record
    raw.write_text(text[:cut])
    live = Converter(raw, tmp_path, "member-1", None)
    live.poll()
    assert len(lines(tmp_path / "consumed" / "member-1.jsonl")) == 1
    assert [e["kind"] for e in lines(tmp_path / "events" / "member-1.jsonl")] == ["started", "assigned"]
    raw.write_text(text)
    live.poll()
    assert [e["kind"] for e in lines(tmp_path / "events" / "member-1.jsonl")][-1] == "stopped"
    assert live.close() == (1, 6)
    assert Converter(raw, tmp_path, "member-1", None).close() == (1, 6)
    assert len(lines(tmp_path / "consumed" / "member-1.jsonl")) == 1 and len(lines(tmp_path / "events" / "member-1.jsonl")) == 6


def test_the_harness_final_pass_is_needed_only_after_a_launcher_died_mid_file(tmp_path):
    from workloads.verifiable import Converter, fully_converted
    raw = tmp_path / "raw.jsonl"
    text = "".join(json.dumps(e) + "\n" for e in RAW)
    raw.write_text(text)
    live = Converter(raw, tmp_path, "member-1", None)
    live.poll()
    assert not fully_converted(raw), "a launcher killed before close() leaves no mark"
    live.close()
    assert fully_converted(raw)
    raw.write_text(text + text[:20])  # printed after the launcher closed: a half line from a killed JVM
    assert not fully_converted(raw)


def test_a_commit_leaves_a_trace_before_it_is_sent(tmp_path):
    """Issue 37: VerifiableConsumer commits a poll's records right after it prints them, so the converter logs
    `commit_sent` (each partition's last offset + 1) at records_consumed; the answer carries the same commit_id and
    the sending time. A JVM killed before the answer leaves the commit_sent alone; an auto-committing member none."""
    from workloads.verifiable import FACTS_EVENT
    consumed = {"timestamp": 121, "name": "records_consumed", "count": 2,
                "partitions": [{"topic": "t", "partition": 0, "count": 2, "minOffset": 5, "maxOffset": 6}]}
    answer = {"timestamp": 900, "name": "offsets_committed", "offsets": [{"topic": "t", "partition": 0, "offset": 7}],
              "success": True}
    raw = tmp_path / "raw.jsonl"
    facts = {"name": FACTS_EVENT, "timestamp": 90, "commit": "sync"}
    raw.write_text("".join(json.dumps(e) + "\n" for e in [facts, RAW[0], consumed, answer, consumed]))
    convert(raw, tmp_path, "member-1", None)
    events = lines(tmp_path / "events" / "member-1.jsonl")
    assert [(e["kind"], e.get("commit_id"), e.get("requested_at_ms")) for e in events] == \
        [("started", None, None), ("commit_sent", 0, None), ("committed", 0, 121), ("commit_sent", 1, None)]
    assert events[1]["offsets"] == events[2]["offsets"] == {"t:0": 7} and events[1]["ts_ms"] == 121
    raw.write_text("".join(json.dumps(e) + "\n" for e in [{**facts, "commit": "auto"}, RAW[0], consumed]))
    convert(raw, tmp_path, "member-2", None)
    assert [e["kind"] for e in lines(tmp_path / "events" / "member-2.jsonl")] == ["started"]
