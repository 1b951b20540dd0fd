"""The signatures of librdkafka#4844 and #5541 (scenarios/zoo/) against rows measured on 2026-11-25, one run on each
release (Kafka 4.3.1 brokers), and of the KIP-848 lost assignment against rows of 2026-11-29, one run on each client
kind: the affected run's rows show the signature, the fixed (or contrast) run's rows do not. The rows are copied
from those runs' report/anomalies.jsonl and events/, cut to the member and window that matter."""
import json
from pathlib import Path

from analysis.api import signature
from harness.scenario import parse_scenario, read_yaml

ZOO_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "zoo"

# librdkafka#4844: two of the 14 `lost` rows of the 2.13.0 run (each a single record at a partition's end);
# the 2.13.2 run had no anomaly at all.
LOST_ONE_PAST_THE_END = [
    {"type": "lost", "topic": "chaos", "partition": 2, "offsets": [252, 252], "count": 1, "members": ["member-2"],
     "generations": [2, 3], "time_ms": [1795603593801, 1795603597083], "fault_ids": ["member_join-1"]},
    {"type": "lost", "topic": "chaos", "partition": 0, "offsets": [575, 575], "count": 1, "members": ["member-1"],
     "generations": [3], "time_ms": [1795603608925, 1795603612703], "fault_ids": ["member_join-1", "member_join-2"]},
]

# ... and, from the 2.13.0 run of 2026-11-25 13:57 (after the commit_ahead check existed), the commit that made a
# loss and the loss it made (partition 5: member-3 committed 261 having consumed up to 259; 260 never delivered).
COMMIT_PAST_THE_END = [
    {"type": "commit_ahead", "topic": "chaos-705a29", "partition": 5, "offsets": [260, 260], "count": 1,
     "members": ["member-3"], "generations": [2], "time_ms": [1795615066830, 1795615066830], "committed_offset": 261,
     "from_offset": 229, "last_consumed": 259, "first_skipped": 260, "skipped": 1, "period": 14,
     "fault_ids": ["member_join-1"]},
    {"type": "lost", "topic": "chaos-705a29", "partition": 5, "offsets": [260, 260], "count": 1,
     "members": ["member-3", "member-4"], "generations": [2, 3], "time_ms": [1795615066562, 1795615069354],
     "fault_ids": ["member_join-1"]},
]

# librdkafka#5541: member-1 after its slow batch. 2.14.2: the fatal INVALID_REQUEST in the poll that reports the
# eviction, and the member ends. 2.15.0: the same eviction, then assigned again and committing.
EVICTED_THEN_FATAL = [
    {"ts_ms": 1795603847931, "member": "member-1", "kind": "commit_failed", "generation": 0,
     "offsets": {"chaos:5": 175, "chaos:4": 146}, "detail": "UNKNOWN_MEMBER_ID: Commit failed: Broker: Unknown member"},
    {"ts_ms": 1795603847931, "member": "member-1", "kind": "revoked", "generation": 0, "partitions": ["chaos:5"]},
    {"ts_ms": 1795603847935, "member": "member-1", "kind": "assigned", "generation": 0, "partitions": []},
    {"ts_ms": 1795603848132, "member": "member-1", "kind": "error", "generation": 0,
     "detail": "_MAX_POLL_EXCEEDED: Application maximum poll interval (10000ms) exceeded by 420ms"},
    {"ts_ms": 1795603848132, "member": "member-1", "kind": "error", "generation": 0, "error": "INVALID_REQUEST",
     "fatal": True, "request": "ConsumerGroupHeartbeat", "detail": "INVALID_REQUEST: Fatal error: Broker: Invalid "
     "request: ConsumerGroupHeartbeat fatal error: Broker: Invalid request"},
]
# the analysis's member_fatal row of that 2.14.2 run (the member's fatal end)
FATAL_ROW = [{"type": "member_fatal", "topic": None, "partition": None, "offsets": None, "count": 1,
              "members": ["member-1"], "generations": [0], "time_ms": [1795603848132, 1795603848132],
              "error": "INVALID_REQUEST", "event": "error", "request": "ConsumerGroupHeartbeat", "fault_ids": []}]
EVICTED_THEN_REJOINED = [
    {"ts_ms": 1795604023556, "member": "member-1", "kind": "commit_failed", "generation": 4,
     "offsets": {"chaos:4": 165, "chaos:5": 190}, "detail": "UNKNOWN_MEMBER_ID: Commit failed: Broker: Unknown member"},
    {"ts_ms": 1795604023556, "member": "member-1", "kind": "revoked", "generation": 4, "partitions": ["chaos:5"]},
    {"ts_ms": 1795604023556, "member": "member-1", "kind": "assigned", "generation": 4, "partitions": []},
    {"ts_ms": 1795604023556, "member": "member-1", "kind": "lost", "generation": 4, "partitions": ["chaos:4"]},
    {"ts_ms": 1795604023783, "member": "member-1", "kind": "error", "generation": 4,
     "detail": "_MAX_POLL_EXCEEDED: Application maximum poll interval (10000ms) exceeded by 353ms"},
    {"ts_ms": 1795604024724, "member": "member-1", "kind": "assigned", "generation": 9, "partitions": ["chaos:4"]},
    {"ts_ms": 1795604025063, "member": "member-1", "kind": "committed", "generation": 9, "offsets": {"chaos:4": 2088}},
]


def _run_dir(tmp_path: Path, name: str, anomalies: list[dict], events: list[dict]) -> Path:
    run = tmp_path / name
    (run / "report").mkdir(parents=True)
    (run / "events").mkdir()
    (run / "report" / "anomalies.jsonl").write_text("".join(json.dumps(a) + "\n" for a in anomalies))
    (run / "events" / "member-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def _shown(bug_file: str, run: Path) -> bool:
    scenario = parse_scenario(read_yaml(ZOO_DIR / bug_file, "scenario"), bug_file)
    return signature.find(run, scenario.zoo.resolved(scenario.settings())).shown


def test_4844_a_commit_one_past_the_end_and_the_single_record_lost_is_the_signature(tmp_path):
    assert _shown("librdkafka-4844.yaml", _run_dir(tmp_path, "affected", COMMIT_PAST_THE_END, []))
    assert not _shown("librdkafka-4844.yaml", _run_dir(tmp_path, "fixed", [], []))


def test_4844_a_loss_without_the_commit_that_made_it_is_not_this_bug(tmp_path):
    """The rows of the first 2.13.0 run, measured before commit_ahead existed: single losses, but not the mechanism."""
    assert not _shown("librdkafka-4844.yaml", _run_dir(tmp_path, "lost only", LOST_ONE_PAST_THE_END, []))


def test_4844_a_wider_loss_or_a_commit_past_several_records_is_not_this_bug(tmp_path):
    commit, loss = COMMIT_PAST_THE_END
    wide_commit = [{**commit, "offsets": [252, 260], "skipped": 9}, loss]
    wide_loss = [commit, {**loss, "offsets": [252, 260], "count": 9}]
    assert not _shown("librdkafka-4844.yaml", _run_dir(tmp_path, "wide commit", wide_commit, []))
    assert not _shown("librdkafka-4844.yaml", _run_dir(tmp_path, "wide loss", wide_loss, []))


def test_5541_the_fatal_after_the_max_poll_eviction_is_the_signature(tmp_path):
    assert _shown("librdkafka-5541.yaml", _run_dir(tmp_path, "affected", FATAL_ROW, EVICTED_THEN_FATAL))
    assert not _shown("librdkafka-5541.yaml", _run_dir(tmp_path, "fixed", [], EVICTED_THEN_REJOINED))


def test_5541_an_invalid_request_without_an_eviction_before_it_is_not_this_bug(tmp_path):
    no_eviction = [e for e in EVICTED_THEN_FATAL if not e.get("detail", "").startswith("_MAX_POLL_EXCEEDED")]
    assert not _shown("librdkafka-5541.yaml", _run_dir(tmp_path, "no-eviction", FATAL_ROW, no_eviction))


# The KIP-848 lost assignment (unreported: docs/upstream/librdkafka-kip848-lost-assignment.md), 2026-11-29: librdkafka
# 2.16.1's member-3 never applied chaos:5, which the coordinator held it owned for 75 s (to the run's end); the Java
# member program, the contrast, applied everything: its anomalies were partitions stalled while member-2 was frozen.
NEVER_APPLIED = [
    {"type": "unapplied_assignment", "topic": "chaos-6bea7c", "partition": 5, "offsets": None, "count": 1,
     "members": ["member-3"], "generations": [], "time_ms": [1795940229701, 1795940304616], "held_ms": 74915,
     "reason": "the coordinator held member-3 owned chaos-6bea7c:5 for 74.9 s in a stable group; member-3 never "
               "applied it", "fault_ids": ["member_freeze-2", "rpc-4"]},
]
FROZEN_OWNER_STALLED = [
    {"type": "stall", "topic": "chaos-de6a4a", "partition": 3, "offsets": [591, 591], "count": 1,
     "members": ["member-2"], "generations": [3], "time_ms": [1795940840875, 1795940853310], "stalled_ms": 12435,
     "waiting_for": "delivery", "last_delivery_ms": 1795940840875, "open": False,
     "reason": "nothing delivered for 12.4 s while acked records waited, owner member-2 alive",
     "fault_ids": ["member_freeze-2", "member_join-3"]},
]


def test_kip848_a_partition_member_3_never_applied_is_the_signature(tmp_path):
    assert _shown("kip848-lost-assignment.yaml", _run_dir(tmp_path, "affected", NEVER_APPLIED, []))
    assert not _shown("kip848-lost-assignment.yaml", _run_dir(tmp_path, "contrast", FROZEN_OWNER_STALLED, []))


def test_kip848_another_member_left_with_an_unapplied_partition_is_not_this_bug(tmp_path):
    """Only member-3's heartbeats time out in this scenario: a stretch of another member is another cause."""
    [row] = NEVER_APPLIED
    assert not _shown("kip848-lost-assignment.yaml", _run_dir(tmp_path, "member-1", [{**row, "members": ["member-1"]}], []))
