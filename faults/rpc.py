"""Faults on single requests (`kind: rpc`): a rule of the request-aware proxy (kafkanet/rpc_proxy.py) that every
member's lane crosses in a run that has one: a group request, or a transactional producer's (a Kafka Streams member
with exactly_once_v2, a command member's) or any Produce.

Target: `group` (every member) or one member (member-N, spares included, or random-member), matched by the
client.id the harness gives each member: its name. Parameters: the `api`, an `action` (delay, hold, error,
drop_connection, observe), `error` (a Kafka error name the API can return) or `delay_ms`, and optionally
`count` (the first N matching requests) and `probability`. The rule is removed at the heal, and what it held
goes on. Every request the rule acts on is a hit in the fault's row of faults.jsonl: when, which member, the
API and version, and what the request said of its member (member_id, generation or KIP-848 epoch; a transactional
request's transactional_id, producer_id and epoch).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Unpack

from pydantic import Field

from faults.base import Fault, FaultParams, StepRecord, params_as
from faults.context import FaultContext, ScenarioFacts
from faults.targets import GROUP_TARGET, MEMBER_ROLES, TargetError, kinds_of, resolve_member, transactional
from faults.timeline import FaultTimeline
from kafkanet.features import TRANSACTION_VERSION_FROM
from kafkanet.rpc_proxy import RULE_APIS, TXN_APIS, RequestHeader, Rule, RpcProxy, request_facts, same_client

if TYPE_CHECKING:
    RuleApi = str  # mypy cannot read a Literal built at run time; pydantic checks the name against RULE_APIS
else:
    RuleApi = Literal[tuple(RULE_APIS)]

_COORDINATOR = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "GROUP_AUTHORIZATION_FAILED")
_TXN_COORDINATOR = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
# The errors each API can answer: the "Possible error codes" of Kafka's *Response.java, and (for JoinGroup and
# SyncGroup, which list none) the errors the Java client's response handlers in AbstractCoordinator and
# ConsumerCoordinator take.
ERRORS_BY_API = {
    "Heartbeat": (*_COORDINATOR, "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID"),
    "JoinGroup": (*_COORDINATOR, "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID", "GROUP_MAX_SIZE_REACHED",
                  "INCONSISTENT_GROUP_PROTOCOL", "INVALID_GROUP_ID", "INVALID_SESSION_TIMEOUT", "MEMBER_ID_REQUIRED",
                  "UNSUPPORTED_VERSION"),
    "SyncGroup": (*_COORDINATOR, "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID",
                  "INCONSISTENT_GROUP_PROTOCOL"),
    "OffsetCommit": (*_COORDINATOR, "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID",
                     "UNKNOWN_TOPIC_OR_PARTITION", "REQUEST_TIMED_OUT", "OFFSET_METADATA_TOO_LARGE", "INVALID_COMMIT_OFFSET_SIZE",
                     "TOPIC_AUTHORIZATION_FAILED", "GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH"),
    "OffsetFetch": (*_COORDINATOR, "UNKNOWN_MEMBER_ID", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION",
                    "TOPIC_AUTHORIZATION_FAILED", "UNSTABLE_OFFSET_COMMIT"),
    "LeaveGroup": (*_COORDINATOR, "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"),
    "FindCoordinator": ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "GROUP_AUTHORIZATION_FAILED", "INVALID_REQUEST"),
    "ConsumerGroupHeartbeat": (*_COORDINATOR, "INVALID_REQUEST", "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "UNSUPPORTED_ASSIGNOR",
                               "UNRELEASED_INSTANCE_ID", "GROUP_MAX_SIZE_REACHED", "INVALID_REGULAR_EXPRESSION"),
    "StreamsGroupHeartbeat": (*_COORDINATOR, "INVALID_REQUEST", "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH",
                              "UNRELEASED_INSTANCE_ID", "GROUP_MAX_SIZE_REACHED", "GROUP_ID_NOT_FOUND",
                              "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "STREAMS_INVALID_TOPOLOGY",
                              "STREAMS_INVALID_TOPOLOGY_EPOCH", "STREAMS_TOPOLOGY_FENCED"),
    # a transactional producer's: the "Possible error codes" of Kafka's *Response.java, and the errors the Java
    # client's TransactionManager handlers take (CONCURRENT_TRANSACTIONS, TRANSACTION_ABORTABLE: KIP-890)
    "InitProducerId": (*_TXN_COORDINATOR, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
                       "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "CONCURRENT_TRANSACTIONS",
                       "INVALID_TRANSACTION_TIMEOUT", "TRANSACTION_ABORTABLE"),
    "AddPartitionsToTxn": (*_TXN_COORDINATOR, "INVALID_TXN_STATE", "INVALID_PRODUCER_ID_MAPPING", "INVALID_PRODUCER_EPOCH",
                           "PRODUCER_FENCED", "TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                           "UNKNOWN_TOPIC_OR_PARTITION", "CONCURRENT_TRANSACTIONS", "TRANSACTION_ABORTABLE"),
    "AddOffsetsToTxn": (*_TXN_COORDINATOR, "INVALID_PRODUCER_ID_MAPPING", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED",
                        "INVALID_TXN_STATE", "GROUP_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                        "CONCURRENT_TRANSACTIONS", "TRANSACTION_ABORTABLE"),
    "EndTxn": (*_TXN_COORDINATOR, "INVALID_TXN_STATE", "INVALID_PRODUCER_ID_MAPPING", "INVALID_PRODUCER_EPOCH",
               "PRODUCER_FENCED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CONCURRENT_TRANSACTIONS",
               "TRANSACTION_ABORTABLE"),
    "TxnOffsetCommit": (*_TXN_COORDINATOR, "INVALID_PRODUCER_EPOCH", "OFFSET_METADATA_TOO_LARGE",
                        "GROUP_AUTHORIZATION_FAILED", "INVALID_COMMIT_OFFSET_SIZE", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                        "UNSUPPORTED_FOR_MESSAGE_FORMAT", "REQUEST_TIMED_OUT", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID",
                        "ILLEGAL_GENERATION", "TRANSACTION_ABORTABLE"),
    "Produce": ("CORRUPT_MESSAGE", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE",
                "INVALID_TOPIC_EXCEPTION", "RECORD_LIST_TOO_LARGE", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                "INVALID_REQUIRED_ACKS", "TOPIC_AUTHORIZATION_FAILED", "UNSUPPORTED_FOR_MESSAGE_FORMAT",
                "INVALID_PRODUCER_EPOCH", "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "INVALID_RECORD", "INVALID_TXN_STATE", "INVALID_PRODUCER_ID_MAPPING", "TRANSACTION_ABORTABLE"),
}
CLASSIC_ONLY = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup")
CONSUMER_ONLY = ("ConsumerGroupHeartbeat",)
STREAMS_ONLY = ("StreamsGroupHeartbeat",)  # KIP-1071's heartbeat: a Kafka Streams group on the `streams` protocol
SENT_ONLY_BY = {"classic": CLASSIC_ONLY, "consumer": CONSUMER_ONLY, "streams": STREAMS_ONLY}
TRANSACTIONAL_ONLY = tuple(api for api in TXN_APIS if api != "Produce")  # a transactional producer's
TV1_ONLY = ("AddPartitionsToTxn", "AddOffsetsToTxn")  # a client on transaction version 2 sends neither (KIP-890)


class RpcParams(FaultParams):
    api: RuleApi = Field(description="the request it acts on: a group request, or a transactional producer's "
                         "(InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit) or Produce")
    action: Literal["delay", "hold", "error", "drop_connection", "observe"] = Field(
        description="delay by delay_ms; hold until the heal; answer with `error`; close the connection; observe: pass "
                    "it on and record the hit")
    error: str | None = Field(None, description="with action: error, a Kafka error name the API can return, e.g. REBALANCE_IN_PROGRESS")
    delay_ms: int | None = Field(None, ge=1, le=600_000, description="with action: delay")
    count: int | None = Field(None, ge=1, description="only the first N matching requests (default: every one until the heal)")
    skip: int = Field(0, ge=0, le=1_000_000, description="let the first N matching requests pass before acting (e.g. a "
                      "joining member's first heartbeat, so that the rule acts once it has a member epoch)")
    probability: float = Field(1.0, gt=0, le=1, description="the chance that a matching request is acted on (seeded by run.seed)")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        if (self.action == "error") != (self.error is not None):
            raise ValueError("error: required with action: error, and only with it")
        if (self.action == "delay") != (self.delay_ms is not None):
            raise ValueError("delay_ms: required with action: delay, and only with it")
        if self.error is not None and self.error not in ERRORS_BY_API[self.api]:
            known = _kafka_error_names()
            why = "is not a Kafka error name" if self.error not in known else f"is not an error {self.api} can return"
            raise ValueError(f"error: {self.error!r} {why}; {self.api} can return {', '.join(ERRORS_BY_API[self.api])}")
        protocol = facts.group.get("protocol", "classic")
        if any(self.api in apis and protocol != sender for sender, apis in SENT_ONLY_BY.items()):
            raise ValueError(f"api: a group with protocol: {protocol} never sends {self.api}")
        if self.api in TXN_APIS:
            _check_producer_api(self.api, facts, target)


def _check_producer_api(api: str, facts: ScenarioFacts, target: str) -> None:
    """A rule on a producer's request needs a member that sends it: a transactional one (a Kafka Streams member with
    exactly_once_v2, or a command member, which may be) for the transaction requests, any producing one for Produce;
    a Java client on transaction version 2 sends no AddPartitionsToTxn or AddOffsetsToTxn."""
    kinds = kinds_of(facts, target)
    sends_transactions = transactional(kinds, facts)
    if api == "Produce" and not (sends_transactions or facts.producing):
        raise ValueError("api: Produce: no member of this group produces (a stateful member's changelog, an "
                         "output topic, or a transactional producer)")
    if api in TRANSACTIONAL_ONLY and not sends_transactions:
        raise ValueError(f"api: only a transactional producer sends {api}, and no member of this group runs one "
                         "(a Kafka Streams group with guarantee exactly_once_v2, or a command member of yours)")
    if api in TV1_ONLY and not any(sends_add_to_txn(kind, facts) for kind in kinds):
        raise ValueError(f"api: {api} is sent only on transaction version 1 (KIP-890: on 2 the brokers add partitions "
                         f"to the transaction themselves); these members' clients speak 2 with these brokers "
                         f"(cluster.transaction_version: 1 makes them send it; librdkafka speaks only 1)")


def sends_add_to_txn(kind_name: str, facts: ScenarioFacts) -> bool:
    """Whether a member of this kind sends AddPartitionsToTxn and AddOffsetsToTxn: on transaction version 1, the
    lower of what its client speaks and what the brokers hold (cluster.transaction_version, else 2 from Kafka 4.0);
    a command member's client is not known: it may."""
    from workloads.kinds import member_kind
    kind = member_kind(kind_name)
    if kind.command:
        return True
    release = facts.kafka_version  # faults/ sits below harness/: its version_tuple is not ours to import
    brokers = facts.transaction_version or (
        2 if release is None or tuple(map(int, release.split(".")[:2])) >= TRANSACTION_VERSION_FROM else 1)
    return min(kind.transaction_version or brokers, brokers) == 1


def _kafka_error_names() -> set[str]:
    from kio.schema.errors import ErrorCode
    return {code.name.upper() for code in ErrorCode}


class RpcFault(Fault):
    """A rule on the members' group requests, in the request-aware proxy every member's lane crosses."""
    kind = "rpc"
    target_kind = "rpc"
    Params = RpcParams
    needs = "lanes"
    effect_from = "first_hit"  # a rule changes nothing until a request matches it

    def __init__(self, target: str, proxy: RpcProxy, params: RpcParams, client_id: str | None, seed: int, *,
                 timeline: FaultTimeline | None = None, members: tuple[str, ...] = (), **kw: object) -> None:
        super().__init__(target, timeline, **{**params.model_dump(exclude_none=True), **kw})
        self.proxy = proxy
        self.members = members  # the run's member names, to name the member a hit's client.id belongs to
        self.hits: list[dict] = []
        self.rule = Rule(api=params.api, action=params.action, client_id=client_id, count=params.count, skip=params.skip,
                         probability=params.probability, delay_ms=params.delay_ms or 0, error=params.error, seed=seed,
                         on_hit=self._hit)

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        if ctx.rpc_proxy is None:
            raise TargetError("this run's member lanes do not cross the request-aware proxy (run.rpc_proxy: false)")
        client_id = None
        if target != GROUP_TARGET:
            client_id = resolve_member(ctx.members, target, ctx.rng).name if target in MEMBER_ROLES else target
        return cls(client_id or target, ctx.rpc_proxy, params_as(RpcParams, params), client_id, ctx.rng.randrange(1 << 30),
                   timeline=ctx.timeline, members=tuple(ctx.members), **record)

    def label(self) -> str:
        """What the rule does: `rpc Heartbeat error REBALANCE_IN_PROGRESS`, `rpc SyncGroup delay 8000 ms`."""
        p = self.params
        return " ".join(str(x) for x in (self.kind, p["api"], p["action"], p.get("error"),
                                         f"{p['delay_ms']} ms" if p.get("delay_ms") else None) if x)

    def facts(self) -> dict:
        """An observe rule passes every request on: its window never opens."""
        return {**super().facts(), **({"effect_from": "never"} if self.params["action"] == "observe" else {})}

    def _hit(self, rule: Rule, header: RequestHeader, frame: bytes) -> None:
        member = self.rule.client_id or next((m for m in sorted(self.members, key=len, reverse=True)
                                              if same_client(m, header.client_id)), header.client_id)
        self.hits.append({"at_ms": self.timeline.now_ms(), "member": member, "api": self.rule.api,
                          "version": header.api_version, **request_facts(frame),
                          **({"client_id": header.client_id} if header.client_id != member else {})})
        self.note(hits=list(self.hits))

    def _inject(self) -> None:
        self.proxy.add_rule(self.rule)

    def _heal(self) -> None:
        self.proxy.remove_rule(self.rule)
