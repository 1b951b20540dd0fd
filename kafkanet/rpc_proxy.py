"""A TCP proxy that understands Kafka's framing: the ground for faults on single group requests (issue 11) and a
transactional producer's (issue 56).

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
import random
import struct
import threading
import typing
from collections import deque
from dataclasses import dataclass, field
from functools import partial

from kafkanet.client_ids import same_client
from kafkanet.clock import now_ms
from kafkanet.error_answer import error_response
from kafkanet.frames import RequestHeader, read_header, read_request

__all__ = ["GROUP_APIS", "TXN_APIS", "RULE_APIS", "API_NAMES", "RequestHeader", "Rule", "RpcProxy", "error_response", "read_header",
           "read_request", "request_facts", "same_client"]

GROUP_APIS = {"OffsetCommit": 8, "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
              "LeaveGroup": 13, "SyncGroup": 14, "ConsumerGroupHeartbeat": 68, "StreamsGroupHeartbeat": 88}
# a transactional producer's requests (and Produce, which any producer sends); AddPartitionsToTxn v4+ and
# WriteTxnMarkers go broker to broker, out of the proxy's sight
TXN_APIS = {"Produce": 0, "InitProducerId": 22, "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26,
            "TxnOffsetCommit": 28}
RULE_APIS = {**GROUP_APIS, **TXN_APIS}  # what a rule can act on
API_NAMES = {1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions", 69: "ConsumerGroupDescribe",
             89: "StreamsGroupDescribe", **{key: name for name, key in RULE_APIS.items()}}
EPOCH_HEARTBEATS = ("ConsumerGroupHeartbeat", "StreamsGroupHeartbeat")  # a leave is one with member epoch -1 or -2
OWNED = {"ConsumerGroupHeartbeatRequest": "topic_partitions", "StreamsGroupHeartbeatRequest": "active_tasks"}
MAX_FRAME = 100 << 20


FACT_FIELDS = (("member_id", "member_id"), ("group_instance_id", "group_instance_id"),
               ("generation_id", "generation"), ("member_epoch", "generation"),
               ("generation_id_or_member_epoch", "generation"),  # OffsetCommit v9+
               ("transactional_id", "transactional_id"), ("v3_and_below_transactional_id", "transactional_id"),
               ("producer_id", "producer_id"), ("v3_and_below_producer_id", "producer_id"),
               ("producer_epoch", "epoch"), ("v3_and_below_producer_epoch", "epoch"),
               ("committed", "committed"))  # EndTxn: commit (true) or abort
BATCH_PRODUCER = struct.Struct(">qh")  # a v2 record batch's producer id and epoch, at byte 43 of its header
BATCH_MAGIC_AT, BATCH_PRODUCER_AT = 16, 43


def request_facts(frame: bytes) -> dict:
    """What a request says about its member, for the record of a rule hit: member_id, group_instance_id, and its
    generation (generation_id; member_epoch for ConsumerGroupHeartbeat and StreamsGroupHeartbeat), and for those two
    how many partitions it says it owns (``owned``: a Streams member's active tasks' partitions; None: a partial
    request, unchanged since the last); a transactional request's transactional_id, producer_id and epoch (a
    Produce's from its first record batch), and an EndTxn's `committed`. Empty when kio cannot read it."""
    try:
        _, request = read_request(frame)
    except Exception:
        return {}
    facts: dict[str, str | int | bool | None] = {}
    for name, key in FACT_FIELDS:
        value = getattr(request, name, None)
        if value is not None:
            facts[key] = value if isinstance(value, (str, bool)) else int(value)
    if type(request).__name__ == "ProduceRequest":
        facts.update(_batch_producer(request))
    owned_field = OWNED.get(type(request).__name__)
    if owned_field is not None:  # what it owns (partitions; a Streams member's active tasks): null when unchanged
        owned = getattr(request, owned_field, None)
        facts["owned"] = None if owned is None else sum(len(t.partitions) for t in owned)
    return facts


def _batch_producer(produce) -> dict:
    """The producer id and epoch of a Produce request's first record batch (magic 2); {} when it has none."""
    for topic in produce.topic_data or ():
        for partition in topic.partition_data or ():
            records = bytes(partition.records or b"")
            if len(records) >= BATCH_PRODUCER_AT + BATCH_PRODUCER.size and records[BATCH_MAGIC_AT] == 2:
                producer_id, epoch = BATCH_PRODUCER.unpack_from(records, BATCH_PRODUCER_AT)
                return {"producer_id": producer_id, "epoch": epoch}
    return {}


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
        if header.api_key != RULE_APIS[self.api] or (self.client_id and not same_client(self.client_id, header.client_id)):
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
        self.transactional_ids: dict[str, set[str]] = {}  # client.id -> the ids its InitProducerIds named

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

    def transactional_ids_by_member(self, members: tuple[str, ...]) -> dict[str, set[str]]:
        """Each member's transactional ids (its clients' InitProducerIds so far; a Streams member's threads each have
        one), for a txn-coordinator target."""
        seen = dict(self.transactional_ids)  # the loop thread may add a client meanwhile
        return {m: set().union(*(ids for client, ids in seen.items() if same_client(m, client))) for m in members}

    def _saw_init_producer_id(self, header: RequestHeader, payload: bytes) -> None:
        transactional_id = request_facts(payload).get("transactional_id")
        if transactional_id and header.client_id:
            self.transactional_ids.setdefault(header.client_id, set()).add(transactional_id)

    def _cut_owner(self, client_id: str | None) -> str | None:
        """The cut member a request's client.id belongs to (same_client), if any."""
        if client_id is None or not self.cut_clients:
            return None
        return client_id if client_id in self.cut_clients else next(
            (name for name in self.cut_clients if same_client(name, client_id)), None)

    def _cut_request(self, client_id: str, header: RequestHeader, payload: bytes) -> bool:
        """Record a cut client's request; True when it must not be forwarded."""
        facts = request_facts(payload) if header.api_key in API_NAMES else {}
        api = API_NAMES.get(header.api_key, f"api {header.api_key}")
        leave = api == "LeaveGroup" or api in EPOCH_HEARTBEATS and facts.get("generation", 0) < 0
        blocked = leave or not self._leaves_only.get(client_id, False)
        self.cut_clients[client_id].append({"at_ms": now_ms(), "api": api, "version": header.api_version,
                                            "forwarded": not blocked, **facts,
                                            **({"client_id": header.client_id} if header.client_id != client_id else {})})
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
            if header.api_key == TXN_APIS["InitProducerId"]:
                self._saw_init_producer_id(header, payload)
            cut = self._cut_owner(header.client_id)
            if cut is not None and self._cut_request(cut, header, payload):
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
