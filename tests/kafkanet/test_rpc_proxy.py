"""The request-aware proxy (kafkanet/rpc_proxy.py) in front of a stand-in upstream that answers every request
frame with its correlation id: headers read, bytes passed unchanged, answers kept in order, and error
responses that kio reads back as the request's own API and version."""
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from kafkanet.rpc_proxy import RULE_APIS, Rule, RpcProxy, error_response, request_facts
from kafkanet.wire import frame


def request(api_key: int, version: int, correlation_id: int, client_id: str, body: bytes = b"", flexible=False) -> bytes:
    return frame(api_key, version, correlation_id, client_id.encode(), body, flexible)


class Upstream:
    """Answers each request with [correlation id][the request's bytes], after `lag_s`."""

    def __init__(self, lag_s=0.0):
        self.lag_s, self.seen = lag_s, []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            while True:
                head = _recv(conn, 4)
                if not head:
                    return
                payload = _recv(conn, struct.unpack(">i", head)[0])
                self.seen.append(payload)
                time.sleep(self.lag_s)
                answer = struct.pack(">i", struct.unpack_from(">hhi", payload)[2]) + payload
                conn.sendall(struct.pack(">i", len(answer)) + answer)


def _recv(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def answers(sock, count):
    out = []
    for _ in range(count):
        size = struct.unpack(">i", _recv(sock, 4))[0]
        out.append(_recv(sock, size))
    return out


def recorded(hits: list, then=None, **rule) -> Rule:
    """A rule whose hits are appended to `hits` as (action, client id); `then(payload)` too, if given."""
    def on_hit(r, header, payload):
        hits.append((r.action, header.client_id))
        if then:
            then(payload)
    return Rule(**rule, on_hit=on_hit)


@pytest.fixture
def proxied():
    upstream = Upstream(lag_s=0.05)
    hits = []
    proxy = RpcProxy({"stand-in": ("127.0.0.1", upstream.port)}).start()
    sock = socket.create_connection(("127.0.0.1", proxy.ports["stand-in"]), timeout=10)
    yield proxy, upstream, sock, hits
    sock.close()
    proxy.stop()


def test_without_rules_every_byte_passes_and_answers_come_back_in_order(proxied):
    proxy, upstream, sock, _ = proxied
    frames = [request(1, 12, i, "member-1", bytes(range(i % 200))) for i in range(50)]
    sock.sendall(b"".join(frames))
    got = answers(sock, 50)
    assert [struct.unpack_from(">i", a)[0] for a in got] == list(range(50))
    assert upstream.seen == [f[4:] for f in frames]


def test_an_error_answer_waits_for_the_answers_to_requests_forwarded_before_it(proxied):
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="Heartbeat", action="error", error="REBALANCE_IN_PROGRESS", client_id="member-1"))
    fetch = request(1, 12, 7, "member-1")
    heartbeat = request(12, 4, 8, "member-1", b"\x06group\x00\x00\x00\x05\x03m1\x00\x00", flexible=True)
    sock.sendall(fetch + heartbeat + request(1, 12, 9, "member-1"))
    first, second, third = answers(sock, 3)
    assert [struct.unpack_from(">i", a)[0] for a in (first, second, third)] == [7, 8, 9]
    from kio.schema.errors import ErrorCode
    from kio.schema.heartbeat.v4.response import HeartbeatResponse
    from kio.serial import entity_reader
    response, _ = entity_reader(HeartbeatResponse)(memoryview(second), 5)  # after the correlation id and empty tags
    assert response.error_code == ErrorCode.rebalance_in_progress
    assert hits == [("error", "member-1")] and len(upstream.seen) == 2  # the heartbeat never reached the broker


def test_a_rule_for_another_client_or_past_its_count_lets_requests_through(proxied):
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="Heartbeat", action="error", error="ILLEGAL_GENERATION", client_id="member-2"))
    proxy.add_rule(recorded(hits, api="Heartbeat", action="delay", delay_ms=1, count=1))
    body = b"\x06group\x00\x00\x00\x05\x03m1\x00\x00"
    sock.sendall(request(12, 4, 1, "member-1", body, True) + request(12, 4, 2, "member-1", body, True))
    assert [struct.unpack_from(">i", a)[0] for a in answers(sock, 2)] == [1, 2]
    assert hits == [("delay", "member-1")] and len(upstream.seen) == 2


def test_a_rule_with_skip_lets_the_first_matching_requests_pass_then_acts(proxied):
    """`skip`: a joining member's first heartbeat passes, the rule acts from its second (issue 39's reproducer)."""
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="Heartbeat", action="delay", delay_ms=1, skip=2, count=1, client_id="member-1"))
    body = b"\x06group\x00\x00\x00\x05\x03m1\x00\x00"
    sock.sendall(b"".join(request(12, 4, i, "member-1", body, True) for i in range(1, 5)))
    assert [struct.unpack_from(">i", a)[0] for a in answers(sock, 4)] == [1, 2, 3, 4]
    assert hits == [("delay", "member-1")] and len(upstream.seen) == 4


def test_a_held_request_holds_its_connection_until_the_heal(proxied):
    proxy, upstream, sock, _ = proxied
    rule = proxy.add_rule(Rule(api="OffsetCommit", action="hold"))
    sock.sendall(request(8, 9, 1, "member-1", flexible=True) + request(1, 12, 2, "member-1"))
    time.sleep(0.5)
    assert upstream.seen == []  # the commit and the fetch behind it wait
    proxy.remove_rule(rule)
    assert [struct.unpack_from(">i", a)[0] for a in answers(sock, 2)] == [1, 2]


def test_drop_connection_closes_the_clients_connection(proxied):
    proxy, _, sock, _ = proxied
    proxy.add_rule(Rule(api="JoinGroup", action="drop_connection"))
    sock.sendall(request(11, 9, 1, "member-1", flexible=True))
    assert sock.recv(4) == b""


def test_an_offset_commit_error_is_set_on_every_partition_the_request_named():
    from kio.schema.errors import ErrorCode
    from kio.schema.offset_commit.v9 import request as req, response as resp
    from kio.serial import entity_reader, entity_writer
    import io
    from kio.static.primitive import i32, i64
    commit = req.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=i32(3), member_id="m", group_instance_id=None,
                                     topics=(req.OffsetCommitRequestTopic(name="t", partitions=tuple(
                                         req.OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(10),
                                                                          committed_leader_epoch=i32(-1), committed_metadata=None)
                                         for p in (0, 4))),))
    body = io.BytesIO()
    entity_writer(req.OffsetCommitRequest)(body, commit)
    payload = request(8, 9, 42, "member-1", body.getvalue(), flexible=True)[4:]
    answered = error_response(payload, "ILLEGAL_GENERATION")
    assert struct.unpack_from(">ii", answered) == (len(answered) - 4, 42)
    answer, _ = entity_reader(resp.OffsetCommitResponse)(memoryview(answered), 9)
    [topic] = answer.topics
    assert topic.name == "t" and [(p.partition_index, p.error_code) for p in topic.partitions] == \
        [(0, ErrorCode.illegal_generation), (4, ErrorCode.illegal_generation)]


def every_group_api_version():
    from kio.index import schema_name_map  # noqa: F401  (kio's own index of what exists)
    from kio.index import load_request_schema
    out = []
    for api, key in RULE_APIS.items():
        for version in range(0, 16):
            try:
                load_request_schema(key, version)
            except Exception:
                continue
            out.append((api, key, version))
    return out


def answered_codes(key: int, version: int, error: str) -> set:
    """The error codes in the proxy's answer to a request of this API version (built by kio, read back whole)."""
    import io

    from kio.index import load_request_schema, load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer

    from kafkanet.error_answer import zero as _zero
    request_cls = load_request_schema(key, version)
    body = io.BytesIO()
    entity_writer(request_cls)(body, _zero(request_cls, ErrorCode.none))
    payload = request(key, version, 5, "member-1", body.getvalue(), flexible=request_cls.__flexible__)[4:]
    answered = error_response(payload, error)
    response_cls = load_response_schema(key, version)
    answer, size = entity_reader(response_cls)(memoryview(answered), 8 + (1 if response_cls.__flexible__ else 0))
    assert struct.unpack_from(">i", answered, 4)[0] == 5 and 8 + response_cls.__flexible__ + size == len(answered)
    return {v for v in _walk(answer) if isinstance(v, ErrorCode)}


@pytest.mark.parametrize("api, key, version", every_group_api_version(), ids=lambda v: str(v))
def test_an_error_response_is_built_for_every_version_of_every_group_api(api, key, version):
    """Where the answer has a top-level error code, it carries the error; where its errors are per item (a
    FindCoordinator key, an OffsetCommit partition, an OffsetFetch group) the request named none, so it carries
    none."""
    import dataclasses

    from kio.index import load_response_schema
    from kio.schema.errors import ErrorCode
    codes = answered_codes(key, version, "NOT_COORDINATOR")
    top_level = "error_code" in {f.name for f in dataclasses.fields(load_response_schema(key, version))}
    assert codes == ({ErrorCode.not_coordinator} if top_level else set()), (api, version, codes)


@pytest.mark.parametrize("api", sorted(RULE_APIS))
def test_every_error_an_rpc_fault_may_name_is_answered_in_the_apis_newest_version(api):
    from faults.rpc import ERRORS_BY_API
    key = RULE_APIS[api]
    newest = max(v for a, _, v in every_group_api_version() if a == api)
    # errors per key, partition or group: the empty request here names none
    per_item = api in ("FindCoordinator", "OffsetCommit", "OffsetFetch", "Produce", "TxnOffsetCommit")
    for error in ERRORS_BY_API[api]:
        names = {c.name for c in answered_codes(key, newest, error)}
        assert names == (set() if per_item else {error.lower()}), (api, newest, error, names)


def _walk(entity):
    import dataclasses
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if dataclasses.is_dataclass(value):
            yield from _walk(value)
        elif isinstance(value, tuple):
            for item in value:
                yield from (_walk(item) if dataclasses.is_dataclass(item) else [item])
        else:
            yield value


def test_an_observe_rule_records_the_request_and_lets_the_acting_rule_act_too(proxied):
    proxy, upstream, sock, hits = proxied
    seen = []
    proxy.add_rule(recorded(hits, lambda payload: seen.append(request_facts(payload)), api="Heartbeat", action="observe"))
    proxy.add_rule(recorded(hits, api="Heartbeat", action="error", error="REBALANCE_IN_PROGRESS", count=1))
    body = b"\x06group\x00\x00\x00\x05\x03m1\x00\x00"  # group, generation 5, member id m1, no instance id, no tags
    sock.sendall(request(12, 4, 1, "member-1", body, True) + request(12, 4, 2, "member-1", body, True))
    assert [struct.unpack_from(">i", a)[0] for a in answers(sock, 2)] == [1, 2]
    assert hits == [("observe", "member-1"), ("error", "member-1"), ("observe", "member-1")]
    assert len(upstream.seen) == 1  # the first was answered by the proxy, the second passed
    assert seen == [{"member_id": "m1", "generation": 5}] * 2


def test_request_facts_read_a_kip_848_heartbeats_member_epoch_and_whether_it_says_what_it_owns():
    import uuid
    from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest, TopicPartitions
    from kio.serial import entity_writer
    from datetime import timedelta
    from kio.static.primitive import i32, i32Timedelta
    import io
    body = io.BytesIO()
    entity_writer(ConsumerGroupHeartbeatRequest)(body, ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m-1", member_epoch=i32(0), instance_id=None, rack_id=None, rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
        subscribed_topic_names=None, server_assignor=None, topic_partitions=None))
    payload = request(68, 0, 3, "member-2", body.getvalue(), flexible=True)[4:]
    assert request_facts(payload) == {"member_id": "m-1", "generation": 0, "owned": None}  # partial: owned unchanged
    full = io.BytesIO()
    entity_writer(ConsumerGroupHeartbeatRequest)(full, ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m-1", member_epoch=i32(5), instance_id=None, rack_id=None, rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
        subscribed_topic_names=None, server_assignor=None,
        topic_partitions=(TopicPartitions(topic_id=uuid.uuid4(), partitions=(i32(1), i32(2))),)))
    assert request_facts(request(68, 0, 4, "member-2", full.getvalue(), flexible=True)[4:])["owned"] == 2
    assert request_facts(b"\x00\x0c\x00\x04\x00\x00\x00\x01\xff\xff\x00garbage") == {}


def test_request_facts_read_an_offset_commits_generation():
    import io

    from kio.schema.errors import ErrorCode
    from kio.schema.offset_commit.v9.request import OffsetCommitRequest
    from kio.serial import entity_writer

    from kafkanet.error_answer import zero as _zero
    body = io.BytesIO()
    entity_writer(OffsetCommitRequest)(body, _zero(OffsetCommitRequest, ErrorCode.none))
    assert request_facts(request(8, 9, 1, "member-1", body.getvalue(), flexible=True)[4:])["generation"] == 0


def streams_heartbeat(epoch: int, active=None) -> bytes:
    """A StreamsGroupHeartbeat v0 body (KIP-1071), as a Kafka Streams member sends it."""
    import io
    from datetime import timedelta

    from kio.schema.streams_group_heartbeat.v0.request import StreamsGroupHeartbeatRequest, TaskIds
    from kio.serial import entity_writer
    from kio.static.primitive import i32, i32Timedelta
    body = io.BytesIO()
    entity_writer(StreamsGroupHeartbeatRequest)(body, StreamsGroupHeartbeatRequest(
        group_id="app", member_id="m-1", member_epoch=i32(epoch), endpoint_information_epoch=i32(0), instance_id=None,
        rack_id=None, rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)), topology=None,
        active_tasks=None if active is None else tuple(TaskIds(subtopology_id="0", partitions=tuple(i32(p) for p in ps))
                                                       for ps in active),
        standby_tasks=None, warmup_tasks=None, process_id=None, user_endpoint=None, client_tags=None, task_offsets=None,
        task_end_offsets=None, shutdown_application=False))
    return body.getvalue()


def test_request_facts_read_a_streams_heartbeats_epoch_and_its_active_tasks():
    assert request_facts(request(88, 0, 3, "member-2-StreamThread-1-consumer", streams_heartbeat(4), flexible=True)[4:]) \
        == {"member_id": "m-1", "generation": 4, "owned": None}
    facts = request_facts(request(88, 0, 4, "m", streams_heartbeat(5, [(0, 3), (1,)]), flexible=True)[4:])
    assert facts["owned"] == 3


def test_a_member_rule_hits_its_streams_threads_clients_and_no_other_members(proxied):
    """Kafka Streams names its clients `<client.id>-StreamThread-N-consumer`: a `member-2` rule acts on member-2's,
    never on member-20's."""
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="StreamsGroupHeartbeat", action="error", error="FENCED_MEMBER_EPOCH",
                            client_id="member-2"))
    sock.sendall(request(88, 0, 1, "member-20-StreamThread-1-consumer", streams_heartbeat(3), flexible=True))
    sock.sendall(request(88, 0, 2, "member-2-StreamThread-1-consumer", streams_heartbeat(3), flexible=True))
    assert [struct.unpack_from(">i", a)[0] for a in answers(sock, 2)] == [1, 2]
    assert hits == [("error", "member-2-StreamThread-1-consumer")]
    assert [struct.unpack_from(">hhi", p)[2] for p in upstream.seen] == [1]


def test_a_cut_member_s_streams_leave_is_kept_from_the_brokers_and_its_heartbeats_go_on(proxied):
    """A hosted crash (leaves only): the Streams member's heartbeat with epoch -1 (its leave) never reaches the
    broker, its heartbeats do, and the record says which of its clients sent each."""
    proxy, upstream, sock, _ = proxied
    proxy.cut("member-2", leaves_only=True)
    sock.sendall(request(88, 0, 1, "member-2-StreamThread-1-consumer", streams_heartbeat(7), flexible=True))
    answers(sock, 1)
    sock.sendall(request(88, 0, 2, "member-2-StreamThread-1-consumer", streams_heartbeat(-1), flexible=True))
    assert sock.recv(4) == b""  # the leave is not forwarded: the connection closes at it
    sent = proxy.uncut("member-2")
    assert [(s["api"], s["generation"], s["forwarded"]) for s in sent] == [
        ("StreamsGroupHeartbeat", 7, True), ("StreamsGroupHeartbeat", -1, False)]
    assert {s["client_id"] for s in sent} == {"member-2-StreamThread-1-consumer"}
    assert [struct.unpack_from(">hhi", p)[2] for p in upstream.seen] == [1]


RECORDED = Path(__file__).parent / "data"  # frames a Kafka Streams 4.3.1 member sent (issue 55), taken off the proxy


def recorded_frame(name: str, correlation_id: int) -> bytes:
    """A recorded request frame (header and body, as the client wrote it), its correlation id replaced, sized."""
    frame = bytearray((RECORDED / name).read_bytes())
    struct.pack_into(">i", frame, 4, correlation_id)
    return struct.pack(">i", len(frame)) + bytes(frame)


def test_a_recorded_4_3_1_streams_heartbeat_is_read_and_a_cut_members_recorded_leave_is_kept_back(proxied):
    """StreamsGroupHeartbeat v0 (what 4.3.1 negotiates; kio reads and answers v0) as member-2's StreamThread sent it:
    the proxy reads its epoch (4) and, with member-2 cut for leaves only, forwards it and keeps the leave (-1) back."""
    proxy, upstream, sock, _ = proxied
    heartbeat, leave = recorded_frame("streams-heartbeat-v0-epoch4.bin", 1), recorded_frame("streams-leave-v0.bin", 2)
    assert request_facts(heartbeat[4:])["generation"] == 4 and request_facts(leave[4:])["generation"] == -1
    proxy.cut("member-2", leaves_only=True)
    sock.sendall(heartbeat)
    answers(sock, 1)
    sock.sendall(leave)
    assert sock.recv(4) == b""  # the leave is not forwarded: the connection closes at it
    sent = proxy.uncut("member-2")
    assert [(s["api"], s["version"], s["generation"], s["forwarded"]) for s in sent] == [
        ("StreamsGroupHeartbeat", 0, 4, True), ("StreamsGroupHeartbeat", 0, -1, False)]
    assert {s["client_id"] for s in sent} == {"member-2-StreamThread-1-consumer"}


def test_a_recorded_streams_heartbeat_gets_a_well_formed_error_answer():
    """An `error` rule's answer to the recorded v0 heartbeat: a StreamsGroupHeartbeat v0 response kio reads back,
    with the error and the request's correlation id."""
    from kio.schema.streams_group_heartbeat.v0.response import StreamsGroupHeartbeatResponse
    from kio.serial import entity_reader

    answer = error_response(recorded_frame("streams-heartbeat-v0-epoch4.bin", 9)[4:], "FENCED_MEMBER_EPOCH")
    size, correlation_id = struct.unpack_from(">ii", answer)
    assert size == len(answer) - 4 and correlation_id == 9
    start = 9  # size, correlation id, then the flexible response header's empty tagged fields
    response, read = entity_reader(StreamsGroupHeartbeatResponse)(memoryview(answer), start)
    assert response.error_code.name == "fenced_member_epoch" and start + read == len(answer)


def encoded(cls, entity) -> bytes:
    import io

    from kio.serial import entity_writer
    body = io.BytesIO()
    entity_writer(cls)(body, entity)
    return body.getvalue()


def end_txn(committed: bool, epoch: int = 3) -> bytes:
    from kio.schema.end_txn.v4.request import EndTxnRequest
    from kio.static.primitive import i16, i64
    return encoded(EndTxnRequest, EndTxnRequest(transactional_id="chaos-group-0_1", producer_id=i64(4001),
                                                producer_epoch=i16(epoch), committed=committed))


def record_batch(producer_id: int, epoch: int) -> bytes:
    """A v2 record batch header with no records: base offset, length, leader epoch, magic 2, crc, attributes (the
    transactional bit), last offset delta, two timestamps, producer id and epoch, base sequence, count."""
    return struct.pack(">qiibIhiqqqhii", 0, 49, -1, 2, 0, 0x10, 0, 0, 0, producer_id, epoch, 0, 0)


def test_request_facts_read_a_transactional_producers_id_epoch_and_end():
    from kio.schema.add_partitions_to_txn.v3 import request as apt
    from kio.schema.produce.v9 import request as produce
    from kio.static.primitive import i16, i32, i64
    assert request_facts(request(26, 4, 1, "member-2-StreamThread-1-producer", end_txn(False), flexible=True)[4:]) == \
        {"transactional_id": "chaos-group-0_1", "producer_id": 4001, "epoch": 3, "committed": False}
    added = apt.AddPartitionsToTxnRequest(v3_and_below_transactional_id="t-1", v3_and_below_producer_id=i64(7),
                                          v3_and_below_producer_epoch=i16(2), v3_and_below_topics=(
                                              apt.AddPartitionsToTxnTopic(name="out", partitions=(i32(0),)),))
    assert request_facts(request(24, 3, 2, "member-1", encoded(apt.AddPartitionsToTxnRequest, added), True)[4:]) == \
        {"transactional_id": "t-1", "producer_id": 7, "epoch": 2}
    sent = produce.ProduceRequest(transactional_id="t-1", acks=i16(-1), timeout=_timeout(), topic_data=(
        produce.TopicProduceData(name="out", partition_data=(
            produce.PartitionProduceData(index=i32(0), records=record_batch(9001, 5)),)),))
    assert request_facts(request(0, 9, 3, "member-1", encoded(produce.ProduceRequest, sent), True)[4:]) == \
        {"transactional_id": "t-1", "producer_id": 9001, "epoch": 5}


def _timeout():
    from datetime import timedelta

    from kio.static.primitive import i32Timedelta
    return i32Timedelta.parse(timedelta(seconds=30))


def test_a_member_rule_on_end_txn_hits_its_streams_producer_and_answers_with_the_error(proxied):
    """A Kafka Streams member's producer (`member-2-StreamThread-1-producer`) is member-2's: an EndTxn error rule on
    member-2 answers its commit with the error (kio reads the answer back) and lets member-20's through."""
    from kio.schema.end_txn.v4.response import EndTxnResponse
    from kio.serial import entity_reader
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="EndTxn", action="error", error="CONCURRENT_TRANSACTIONS", client_id="member-2"))
    sock.sendall(request(26, 4, 1, "member-20-StreamThread-1-producer", end_txn(True), flexible=True))
    sock.sendall(request(26, 4, 2, "member-2-StreamThread-1-producer", end_txn(True), flexible=True))
    first, second = answers(sock, 2)
    assert struct.unpack_from(">i", first)[0] == 1 and struct.unpack_from(">i", second)[0] == 2
    response, _ = entity_reader(EndTxnResponse)(memoryview(second), 5)
    assert response.error_code.name == "concurrent_transactions"
    assert hits == [("error", "member-2-StreamThread-1-producer")] and len(upstream.seen) == 1


def test_a_delayed_request_reaches_the_broker_after_its_client_disconnected(proxied):
    """KAFKA-17754's shape: an EndTxn held back by a delay rule still reaches the broker after the client gave up on
    its connection (closed it), as a late network packet would."""
    proxy, upstream, sock, hits = proxied
    proxy.add_rule(recorded(hits, api="EndTxn", action="delay", delay_ms=400))
    sock.sendall(request(26, 4, 7, "member-1", end_txn(True), flexible=True))
    time.sleep(0.1)
    sock.close()  # the client timed out and left before the delay ran out
    deadline = time.monotonic() + 5
    while not upstream.seen and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hits == [("delay", "member-1")]
    assert [struct.unpack_from(">hhi", p) for p in upstream.seen] == [(26, 4, 7)]
