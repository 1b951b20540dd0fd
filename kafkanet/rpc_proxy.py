"""A TCP proxy that understands Kafka's framing: the ground for faults on single group requests (issue 11).

Every byte is forwarded unchanged. Each request's header (api key, version, correlation id, client id) is
read as it passes, and a rule can act on the request it matches:
- `delay` it by D ms;
- `hold` it until the rule is removed;
- answer it with an `error`, in a response that kio builds for the request's exact API version;
- `drop_connection`;
- `observe` it: pass it on untouched, but report it (what a member sent after a fault, e.g. its epoch).

Kafka answers the requests of one connection in order, and the clients rely on that (Java's NetworkClient
refuses a response whose correlation id is not the oldest in flight). So a request that is held or delayed
holds everything behind it on its connection, and an answer that the proxy makes itself is sent only once
every request forwarded before it has been answered. A client's group requests travel on their own
connection to the coordinator (both librdkafka and the Java client keep one), so the rest of its traffic
flows on.
"""
from __future__ import annotations

import asyncio
import io
import random
import struct
import threading
import types
import typing
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache, partial

from kafkanet.clock import now_ms
from kafkanet.wire import read_uvarint

GROUP_APIS = {"OffsetCommit": 8, "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
              "LeaveGroup": 13, "SyncGroup": 14, "ConsumerGroupHeartbeat": 68}
API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions", 69: "ConsumerGroupDescribe",
             **{key: name for name, key in GROUP_APIS.items()}}
MAX_FRAME = 100 << 20


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes of the header in the frame, tagged fields included


def read_header(frame: bytes, flexible: bool = False) -> RequestHeader:
    """The header at the start of a request frame (without its 4-byte size). Its first four fields are the
    same in every header version; client_id stays a classic nullable string even in the flexible v2."""
    api_key, api_version, correlation_id, n = struct.unpack_from(">hhih", frame, 0)
    client_id = None if n < 0 else frame[10:10 + n].decode()
    size = 10 + max(n, 0)
    if flexible:  # tagged fields: a count, then (tag, size, bytes) each
        count, size = read_uvarint(frame, size)
        for _ in range(count):
            _, size = read_uvarint(frame, size)
            length, size = read_uvarint(frame, size)
            size += length
    return RequestHeader(api_key, api_version, correlation_id, client_id, size)


def read_request(frame: bytes) -> tuple[RequestHeader, object]:
    """The header (its whole size, tagged fields included) and the body of a request frame, read by kio for
    the request's own API version."""
    from kio.index import load_request_schema
    from kio.serial import entity_reader
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    header = read_header(frame, is_flexible(api_key, api_version))
    request, _ = entity_reader(load_request_schema(api_key, api_version))(memoryview(frame), header.size)
    return header, request


def request_facts(frame: bytes) -> dict:
    """What a group request says about its member, for the record of a rule hit: member_id, group_instance_id,
    and its generation (generation_id; member_epoch for ConsumerGroupHeartbeat), and for a ConsumerGroupHeartbeat
    how many partitions it says it owns (``owned``; None: a partial request, unchanged since the last). Empty when
    kio cannot read it."""
    try:
        _, request = read_request(frame)
    except Exception:
        return {}
    facts: dict[str, str | int | None] = {}
    for name, key in (("member_id", "member_id"), ("group_instance_id", "group_instance_id"),
                      ("generation_id", "generation"), ("member_epoch", "generation"),
                      ("generation_id_or_member_epoch", "generation")):  # OffsetCommit v9+
        value = getattr(request, name, None)
        if value is not None:
            facts[key] = value if isinstance(value, str) else int(value)
    if type(request).__name__ == "ConsumerGroupHeartbeatRequest":  # its owned partitions: null when unchanged (partial)
        owned = getattr(request, "topic_partitions", None)
        facts["owned"] = None if owned is None else sum(len(t.partitions) for t in owned)
    return facts


@cache
def is_flexible(api_key: int, api_version: int) -> bool:
    from kio.index import load_request_schema
    try:
        return load_request_schema(api_key, api_version).__flexible__
    except Exception:  # an API kio does not know: its header is read as v1 (client_id, no tags)
        return False


# ---------------------------------------------------------------------------------------- error responses
def error_response(frame: bytes, error_name: str) -> bytes:
    """The whole response frame (size included) answering this request with the named error: every field
    of the response left at its zero value but the error code(s), which go wherever the API carries them
    (per partition for OffsetCommit, per group for OffsetFetch v8+, per key for FindCoordinator v4+)."""
    from kio.index import load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_writer
    code = ErrorCode[error_name.lower()]
    header, request = read_request(frame)
    response_cls = load_response_schema(header.api_key, header.api_version)
    response = _zero(response_cls, code, request)
    body = io.BytesIO()
    entity_writer(response_cls)(body, response)
    head = struct.pack(">i", header.correlation_id) + (b"\x00" if response_cls.__flexible__ else b"")
    payload = head + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def _zero(cls, code, request=None):
    """An instance of a kio entity with every field at its zero value and every error code set to `code`;
    collections that answer a request's items are filled from the request (topics, partitions, groups,
    keys), so the client finds the error where it looks for it."""
    import dataclasses

    from kio.static.primitive import i32Timedelta, i64Timedelta
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        kind, hint = f.metadata.get("kafka_type"), hints[f.name]
        if kind == "error_code":
            values[f.name] = code
        elif kind in ("timedelta_i32", "timedelta_i64"):
            values[f.name] = (i32Timedelta if kind == "timedelta_i32" else i64Timedelta).parse(timedelta(0))
        elif typing.get_origin(hint) is tuple:
            item = typing.get_args(hint)[0]
            values[f.name] = tuple(_zero(item, code, r) for r in _echo(request, f.name)) if dataclasses.is_dataclass(item) else ()
        elif _optional(hint) is not None and dataclasses.is_dataclass(_optional(hint)):
            values[f.name] = None
        elif dataclasses.is_dataclass(hint):
            values[f.name] = _zero(hint, code, getattr(request, f.name, None))
        elif f.name in ("name", "partition_index", "group_id", "key", "member_id", "group_instance_id") and request is not None \
                and hasattr(request, f.name):
            values[f.name] = getattr(request, f.name)
        else:
            values[f.name] = _zero_scalar(kind, hint)
    return cls(**values)


def _echo(request, name: str) -> tuple:
    """The request's items a response collection answers: the same-named field, or for FindCoordinator v4+
    the coordinator keys."""
    if request is None:
        return ()
    if name == "coordinators" and hasattr(request, "coordinator_keys"):
        return tuple(_Key(k) for k in request.coordinator_keys)
    return tuple(getattr(request, name, ()) or ())


@dataclass(frozen=True)
class _Key:
    key: str


def _optional(hint):
    """X for a hint `X | None`, else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else None


def _zero_scalar(kind, hint):
    if kind == "bool":
        return False
    if kind == "string":  # str, or one of kio's named strings (GroupId, TopicName, ...); None when nullable
        return hint("") if isinstance(hint, type) and issubclass(hint, str) else None
    if kind in ("bytes", "records"):
        return b"" if hint is bytes else None
    if isinstance(hint, type) and issubclass(hint, int):  # kio's i8 ... i64
        return hint(0)
    return None


# ---------------------------------------------------------------------------------------- rules
@dataclass
class Rule:
    """What to do with the requests it matches: the API, optionally one client (its client.id), the first
    `count` of them after the first `skip` (let pass) and a `probability`. `on_hit(rule, header, frame)` is called for
    each request it acts on."""
    api: str
    action: str
    client_id: str | None = None
    count: int | None = None
    skip: int = 0
    probability: float = 1.0
    delay_ms: int = 0
    error: str | None = None
    seed: int | None = None
    on_hit: typing.Callable | None = field(default=None, repr=False)
    hits: int = 0
    passed: int = 0  # matching requests let pass for `skip`
    released: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # set at the rule's removal

    def __post_init__(self) -> None:
        if (self.action == "error") != (self.error is not None):
            raise ValueError(f"rule on {self.api}: an error goes with action error, and only with it")
        self._rng = random.Random(self.seed)

    def matches(self, header: RequestHeader) -> bool:
        if header.api_key != GROUP_APIS[self.api] or (self.client_id and header.client_id != self.client_id):
            return False
        if self.passed < self.skip:
            self.passed += 1
            return False
        if self.count is not None and self.hits >= self.count:
            return False
        return self.probability >= 1 or self._rng.random() < self.probability


# ---------------------------------------------------------------------------------------- the proxy
class RpcProxy:
    """One listening port (any free one, on `host`) per upstream (a broker's listener, by name); rules shared
    by all. Runs its own event loop in a thread, so the harness calls it like any other fault backend."""

    def __init__(self, upstreams: dict[str, tuple[str, int]], host: str = "127.0.0.1") -> None:
        self.upstreams, self.host = upstreams, host
        self.rules: list[Rule] = []
        self.ports: dict[str, int] = {}  # upstream name -> the port it is reached on
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rpc-proxy", daemon=True)
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: set[asyncio.StreamWriter] = set()
        self.cut_clients: dict[str, list[dict]] = {}  # client.id -> what it sent since its cut
        self._leaves_only: dict[str, bool] = {}

    def start(self) -> "RpcProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)
        return self

    async def _listen(self) -> None:
        for name, upstream in self.upstreams.items():
            server = await asyncio.start_server(partial(self._serve, upstream=upstream), self.host, 0)
            self._servers.append(server)
            self.ports[name] = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def close():
            for server in self._servers:
                server.close()
            for writer in list(self._connections):
                writer.close()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def add_rule(self, rule: Rule) -> Rule:
        """Active for every request read after this returns."""
        async def add():
            rule.released = asyncio.Event()  # unset again, for a rule added after an earlier removal
            self.rules.append(rule)
        asyncio.run_coroutine_threadsafe(add(), self._loop).result(timeout=10)
        return rule

    def remove_rule(self, rule: Rule) -> None:
        """The heal: the rule stops matching, and the requests it held go on."""
        async def remove():
            if rule in self.rules:
                self.rules.remove(rule)
            rule.released.set()
        asyncio.run_coroutine_threadsafe(remove(), self._loop).result(timeout=10)

    def cut(self, client_id: str, leaves_only: bool = False) -> None:
        """One client's requests stop reaching the brokers, told apart from other clients on the same lane by the
        client.id in every request's header. Every request it sends from now on is kept in cut_clients[client_id]
        (at_ms, api, version, what it says of its member, and whether it was forwarded).

        A whole cut (a member cut off the cluster): each of its connections is closed at its next request, which is
        never forwarded, and so is any connection it opens later; what it sent before the cut is still answered.
        `leaves_only` (a hosted member's crash): only its leaves are kept from the brokers (LeaveGroup, and a
        ConsumerGroupHeartbeat with member epoch -1 or -2), everything else goes on, so a commit already under way
        ends as it would have; the list then proves what the member did or did not send once it was down."""
        async def cut():
            self.cut_clients[client_id] = []
            self._leaves_only[client_id] = leaves_only
        asyncio.run_coroutine_threadsafe(cut(), self._loop).result(timeout=10)

    def uncut(self, client_id: str) -> list[dict]:
        """Its traffic flows again; returns what it sent while cut."""
        async def uncut():
            self._leaves_only.pop(client_id, None)
            return self.cut_clients.pop(client_id, [])
        return asyncio.run_coroutine_threadsafe(uncut(), self._loop).result(timeout=10)

    def _cut_request(self, client_id: str, header: RequestHeader, payload: bytes) -> bool:
        """Record a cut client's request; True when it must not be forwarded."""
        facts = request_facts(payload) if header.api_key in API_NAMES else {}
        api = API_NAMES.get(header.api_key, f"api {header.api_key}")
        leave = api == "LeaveGroup" or api == "ConsumerGroupHeartbeat" and facts.get("generation", 0) < 0
        blocked = leave or not self._leaves_only.get(client_id, False)
        self.cut_clients[client_id].append({"at_ms": now_ms(), "api": api, "version": header.api_version,
                                                   "forwarded": not blocked, **facts})
        return blocked

    # -- one client connection ------------------------------------------------------------------
    async def _serve(self, client_r, client_w, upstream) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*upstream)
        except OSError:
            client_w.close()
            return
        self._connections |= {client_w, up_w}
        conn = _Connection(client_w)
        tasks = [asyncio.create_task(self._requests(client_r, up_w, conn)),
                 asyncio.create_task(self._responses(up_r, conn))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        for w in (client_w, up_w):
            w.close()
            self._connections.discard(w)

    async def _requests(self, reader, up_w, conn: "_Connection") -> None:
        while True:
            frame = await _read_frame(reader)
            if frame is None:
                return
            payload = frame[4:]
            header = read_header(payload)
            if header.client_id is not None and header.client_id in self.cut_clients \
                    and self._cut_request(header.client_id, header, payload):
                return
            for watcher in [r for r in self.rules if r.action == "observe" and r.matches(header)]:
                self._hit(watcher, header, payload)
            rule = next((r for r in self.rules if r.action != "observe" and r.matches(header)), None)
            if rule is None:
                conn.forwarded(header.correlation_id)
                up_w.write(frame)
                await up_w.drain()
                continue
            self._hit(rule, header, payload)
            if rule.action == "drop_connection":
                return
            if rule.action == "delay":
                await asyncio.sleep(rule.delay_ms / 1000)
            elif rule.action == "hold":
                await rule.released.wait()
            if rule.error is not None:  # action error
                conn.answer(error_response(payload, rule.error))
                await conn.flush()
                continue
            conn.forwarded(header.correlation_id)
            up_w.write(frame)
            await up_w.drain()

    def _hit(self, rule: Rule, header: RequestHeader, payload: bytes) -> None:
        rule.hits += 1
        if rule.on_hit is not None:
            rule.on_hit(rule, header, payload)

    async def _responses(self, up_r, conn: "_Connection") -> None:
        while True:
            frame = await _read_frame(up_r)
            if frame is None:
                return
            await conn.upstream_answered(struct.unpack_from(">i", frame, 4)[0], frame)


class _Connection:
    """In-order answers on one client connection: the proxy's own answers wait for the broker's answers to
    every request forwarded before them. A request that gets no answer (a Produce with acks=0) is passed
    over when a later one is answered."""

    def __init__(self, client_w) -> None:
        self.client_w = client_w
        self.in_flight: deque[int] = deque()              # correlation ids forwarded, oldest first
        self.queued: deque[tuple[int | None, bytes]] = deque()  # (answer after this id, own answer)

    def forwarded(self, correlation_id: int) -> None:
        self.in_flight.append(correlation_id)

    def answer(self, frame: bytes) -> None:
        self.queued.append((self.in_flight[-1] if self.in_flight else None, frame))

    async def upstream_answered(self, correlation_id: int, frame: bytes) -> None:
        while self.in_flight:
            done = self.in_flight.popleft()
            if done == correlation_id:
                break
        self.client_w.write(frame)
        await self.flush()

    async def flush(self) -> None:
        while self.queued and (self.queued[0][0] is None or self.queued[0][0] not in self.in_flight):
            self.client_w.write(self.queued.popleft()[1])
        await self.client_w.drain()


async def _read_frame(reader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        (size,) = struct.unpack(">i", head)
        if not 0 <= size <= MAX_FRAME:
            return None
        return head + await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
