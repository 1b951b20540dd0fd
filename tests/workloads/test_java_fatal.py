"""Issue 22: a Java member that VerifiableConsumer ended on an exception logs it as its last event (the JVM exits 0
as after a requested stop; only its log says why), and its `started` event names the kafka-clients release that ran."""
import json
import zipfile

from workloads.java_member import kafka_clients_version
from workloads.verifiable import FATAL_EVENT, FatalWatch, convert, kafka_error_name

FENCED_LOG = """[2026-11-25 10:40:01,000] WARN [Consumer clientId=member-1, groupId=g] something else (org.apache.kafka.x)
[2026-11-25 11:17:37,130] ERROR [Consumer instanceId=instance-1, clientId=member-1, groupId=g] Offset commit failed on \
partition t-0 at offset 8025: The broker rejected this static consumer since another consumer with the same \
group.instance.id has registered with a different member.id. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
[2026-11-25 11:17:37,150] ERROR Error during processing, terminating consumer process:  (org.apache.kafka.tools.VerifiableConsumer)
org.apache.kafka.common.errors.FencedInstanceIdException: The broker rejected this static consumer since another \
consumer with the same group.instance.id has registered with a different member.id.
"""  # as seen on Kafka 4.3.1 (classic): ApiExceptions carry no stack trace


def watched(log: str) -> list[dict]:
    watch = FatalWatch(lambda: 1_000)
    return [e for e in (watch.line(line) for line in log.splitlines(keepends=True)) if e is not None]


def test_the_exception_that_ended_the_loop_is_one_event_with_its_kafka_error_and_request():
    assert watched(FENCED_LOG + FENCED_LOG) == [
        {"name": FATAL_EVENT, "timestamp": 1_000, "error": "FENCED_INSTANCE_ID", "request": "OffsetCommit",
         "message": "The broker rejected this static consumer since another consumer with the same group.instance.id "
                    "has registered with a different member.id."}]


def test_the_request_is_the_one_the_clients_last_error_line_names():
    heartbeat = ("[2026-11-25 10:47:55,081] ERROR [Consumer instanceId=instance-1, clientId=member-1, groupId=g] Caught "
                 "fenced group.instance.id Optional[instance-1] error in heartbeat thread (org.apache.kafka.clients."
                 "consumer.internals.ConsumerCoordinator)\n")
    lines = FENCED_LOG.splitlines(keepends=True)
    assert [e["request"] for e in watched("".join(lines[:2] + [heartbeat] + lines[2:]))] == ["Heartbeat"]
    assert [e["request"] for e in watched("".join(lines[:1] + lines[2:]))] == [None]


def test_a_log_without_the_terminating_line_gives_nothing():
    assert watched(FENCED_LOG.replace("terminating consumer process", "going on")) == []


def test_kafka_exceptions_are_named_as_their_error_codes():
    assert kafka_error_name("org.apache.kafka.common.errors.UnreleasedInstanceIdException") == "UNRELEASED_INSTANCE_ID"
    assert kafka_error_name("org.apache.kafka.common.errors.FencedMemberEpochException") == "FENCED_MEMBER_EPOCH"
    assert kafka_error_name("java.lang.IllegalStateException") == "IllegalStateException"


def test_the_converter_ends_the_member_on_the_fatal_event(tmp_path):
    raw = tmp_path / "raw.jsonl"
    fatal = watched(FENCED_LOG)[0]
    lines = [{"timestamp": 100, "name": "startup_complete"}, {**fatal, "timestamp": 900},
             {"timestamp": 950, "name": "shutdown_complete"}]
    raw.write_text("".join(json.dumps(e) + "\n" for e in lines))
    convert(raw, tmp_path, "member-1", "instance-1")
    events = [json.loads(line) for line in (tmp_path / "events" / "member-1.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events] == ["started", "fenced", "stopped"]
    assert {k: events[1][k] for k in ("ts_ms", "error", "fatal", "request", "detail")} == \
        {"ts_ms": 900, "error": "FENCED_INSTANCE_ID", "fatal": True, "request": "OffsetCommit",
         "detail": f"FENCED_INSTANCE_ID: {fatal['message']}"}


def test_client_version_is_read_from_the_kafka_clients_jar(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    with zipfile.ZipFile(libs / "kafka-clients-3.9.1.jar", "w") as jar:
        jar.writestr("kafka/kafka-version.properties", "commitId=abc\nversion=3.9.1\n")
    (libs / "kafka-tools-3.9.1.jar").write_bytes(b"not read")
    assert kafka_clients_version(f"{libs}/*") == "3.9.1"
    assert kafka_clients_version(str(libs / "kafka-clients-3.9.1.jar")) == "3.9.1"
    assert kafka_clients_version(f"{tmp_path}/none/*") is None
