"""Run-directory contract v1 (DESIGN.md): the columns, their types and rules, and THE validator.

Every reader of a run directory checks its input here: the analysis (JSON lines and Parquet row groups,
once Spark has counted bad rows, see inputs.bad_sql), the history reader (events/, faults.jsonl) and
``compact``. The error is always one line naming the file, the line (JSONL) or row (Parquet) and the column.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from analysis.errors import InputError

STRING, INT32, INT64, LIST, OBJECT, BOOL = "string", "int32", "int64", "list", "object", "bool"
STATUSES = ("ok", "fail", "info", "unplaced")  # produced status: docs/DESIGN.md, produced/
EVENT_KINDS = ("started", "assigned", "revoked", "lost", "commit_sent", "committed", "commit_failed", "fenced",
               "stopped", "crashed", "error", "admin_call", "join_overdue", "restore_start", "restore_end",
               "standby_start", "standby_end",  # a Streams member's standby task updating its store (ChaosStreams)
               "rewound")  # a transactional member's partitions back to their committed offsets after an abort
WORKLOAD_PHASE = "workload and faults"  # run.json's phase of the workload (its cpu_pressure_pct, its seconds)
OUTPUT_FILE = "output.json"  # output-topic mode: the read-back of the members' output topic (harness/output_topic.py)
MEMBER_ROLE = "member"  # an events row's role when absent: a group member (an admin probe is not one)
RECORD_SUFFIXES = (".parquet", ".jsonl")
EFFECT_FROM = ("inject", "first_hit", "never")  # a fault's window of effect opens at its inject, its first hit, never
# what a fault changes of the group: a member starts (a join), ends (a crash or a leave), stops and comes back (a
# bounce), or partitions are added (to a topic, or a new matching topic)
GROUP_CHANGES = ("member_starts", "member_ends", "member_returns", "partitions_added")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    required: bool = False
    if_ok: bool = False             # required only when status is absent or "ok" (produced partition/offset)
    min: int | None = None
    values: tuple | None = None


_POSITION = dict(min=0)
PRODUCED = (
    Column("topic", STRING, True), Column("partition", INT32, True, if_ok=True, **_POSITION),
    Column("offset", INT64, True, if_ok=True, **_POSITION), Column("acked_at_ms", INT64, True), Column("key", STRING),
    Column("producer_id", STRING), Column("seq", INT64), Column("status", STRING, values=STATUSES),
)
CONSUMED = (
    Column("topic", STRING, True), Column("partition", INT32, True, **_POSITION), Column("offset", INT64, True, **_POSITION),
    Column("member", STRING, True), Column("consumed_at_ms", INT64, True), Column("key", STRING),
    Column("producer_id", STRING), Column("seq", INT64), Column("instance_id", STRING),
    Column("generation", INT32), Column("client", STRING),
    Column("n", INT64, min=0),  # the member's consumption sequence: 0, 1, 2, ... in the order its polls returned them
)
EVENTS = (
    Column("ts_ms", INT64, True), Column("member", STRING, True), Column("kind", STRING, True),
    Column("generation", INT32), Column("partitions", LIST), Column("offsets", OBJECT), Column("detail", STRING),
    # typed facts of a `started` event (issue 8)
    Column("client", STRING), Column("protocol", STRING), Column("assignor", STRING), Column("instance_id", STRING),
    Column("commit", STRING), Column("heartbeat_interval_ms", INT64), Column("client_version", STRING),
    Column("librdkafka_version", STRING), Column("guarantee", STRING),  # a Kafka Streams member's processing.guarantee
    # a hosted member's (issue 39): the member host it ran in, and the client settings hosting changed
    Column("host", STRING), Column("hosted_settings", OBJECT),
    # the error a member ended on (`fenced`, `error`; issue 22)
    Column("error", STRING), Column("fatal", BOOL), Column("request", STRING),
    # who logged it (absent: a member), and a death by a signal the harness logged for the process (issue 22)
    Column("role", STRING), Column("signal", STRING), Column("exit_code", INT64), Column("elapsed_ms", INT64),
    # a commit's window (issue 37): when it was sent (a lower bound), and the id that pairs commit_sent with its answer
    Column("requested_at_ms", INT64), Column("commit_id", INT64, min=0),
    # a stateful member's restore (workloads/state.py): the changelog read from..to, the records read, whether the
    # partition went before the restore ended (elapsed_ms: how long it took)
    Column("from_offset", INT64, min=0), Column("to_offset", INT64, min=0), Column("records", INT64, min=0),
    Column("aborted", BOOL),
)
FAULTS = (
    Column("id", STRING, True), Column("kind", STRING, True), Column("target", STRING, True),
    Column("injected_at_ms", INT64, True), Column("healed_at_ms", INT64), Column("params", OBJECT),
    Column("hits", LIST),  # an rpc fault's requests acted on (faults/rpc.py): at_ms, member, api, ...
    Column("expected_fatal", LIST),  # the members the fault means to end on a fatal client error (issue 22)
    # what the fault is, so that the analysis names no kind (issue 24; a row without them: history.fault_facts)
    Column("ends_process", BOOL), Column("effect_from", STRING, values=EFFECT_FROM), Column("label", STRING),
    Column("group_change", STRING, values=GROUP_CHANGES),
    Column("stopped_at_ms", INT64),  # a fault that ends a process: when it really stopped (faults/process.py)
)
GROUP_KINDS = ("described", "unsettled")
GROUP = (  # group.jsonl: what the harness saw of the group (harness/settling.py)
    Column("ts_ms", INT64, True), Column("kind", STRING, True), Column("phase", STRING),
    # a description: the group's state, its members, the partitions assigned, the coordinator's node id
    Column("state", STRING), Column("members", INT64, min=0), Column("assigned", INT64, min=0), Column("coordinator", INT64),
    # unsettled: the limit it had, what settled meant, the last description and the lag per "topic:partition"
    Column("limit_ms", INT64, min=0), Column("expected_members", INT64, min=0), Column("partitions", INT64, min=0),
    Column("last_described", OBJECT), Column("lag", OBJECT),
)
GROUP_STATE_KINDS = ("sampler", "state", "unknown", "sampler_end")
GROUP_STATES = (  # group-states.jsonl: the group as its coordinator described it, the whole run (harness/group_sampler.py)
    Column("ts_ms", INT64, True), Column("kind", STRING, True, values=GROUP_STATE_KINDS),
    Column("since_ms", INT64),  # a state/unknown row: it began after this (the sample before), by ts_ms at the latest
    # sampler: how often, which protocol and which request; sampler_end: how many samples
    Column("interval_ms", INT64, min=1), Column("protocol", STRING, values=("classic", "consumer", "streams")), Column("api", STRING),
    Column("samples", INT64, min=0),
    # state: what the coordinator said (classic: no generation; KIP-848: the epochs, each member's by its client.id)
    Column("state", STRING), Column("members", INT64, min=0), Column("assigned", INT64, min=0), Column("assignor", STRING),
    Column("coordinator", STRING), Column("group_epoch", INT64), Column("assignment_epoch", INT64),
    Column("member_epochs", OBJECT),
    Column("assignments", OBJECT),  # client.id -> ["topic:partition", ...]: the coordinator's view of who owns what
    Column("member_ids", OBJECT),  # member id -> client.id: names the members coordinator.log speaks of by their id
    Column("standby_tasks", OBJECT), Column("warmup_tasks", OBJECT),  # streams: client.id -> ["topic:partition", ...]
    Column("error", STRING),  # unknown: why the coordinator could not say
)
STATE = (  # state/<member>.jsonl: one change a stateful member applied (workloads/state.py)
    Column("ts_ms", INT64, True), Column("member", STRING, True), Column("topic", STRING, True),
    Column("partition", INT32, True, **_POSITION), Column("key", STRING, True), Column("offset", INT64, True, **_POSITION),
    Column("prev_offset", INT64, True, min=-1),  # the last_offset of the value it built on (-1: the zero value)
    Column("count", INT64, True, min=1), Column("sum", INT64, True), Column("generation", INT32),
)
FINAL_STATE = (  # state/final.jsonl: each key's last changelog value after the drain (harness/state.py)
    Column("partition", INT32, True, **_POSITION), Column("key", STRING, True), Column("count", INT64, True, min=0),
    Column("sum", INT64, True), Column("last_offset", INT64, True, min=-1),
    Column("member", STRING), Column("ts_ms", INT64),  # who wrote the value, and its state row's ts_ms
)
TXN_OPS = ("init", "begin", "send", "ack", "send_offsets", "commit", "abort")
TRANSACTIONS = (  # transactions/<member>.jsonl: one operation of a transactional member's producer (workloads/transactions.py)
    Column("ts_ms", INT64, True), Column("member", STRING, True), Column("transactional_id", STRING, True),
    Column("op", STRING, True, values=TXN_OPS), Column("txn", INT64, True, min=0), Column("timeout_ms", INT64),
    Column("elapsed_ms", INT64), Column("retries", INT64), Column("input", STRING), Column("partition", INT32),
    Column("offset", INT64), Column("offsets", OBJECT), Column("why", STRING), Column("error", STRING),
    Column("error_class", STRING), Column("detail", STRING),
)
VERIFIED = (  # verified/<isolation>.jsonl: one output record a verified reader read (harness/verified.py)
    Column("partition", INT32, True, **_POSITION), Column("offset", INT64, True, **_POSITION),
    Column("topic", STRING, True), Column("input_partition", INT32, True, **_POSITION),
    Column("input_offset", INT64, True, **_POSITION), Column("member", STRING, True), Column("txn", INT64, min=0),
    Column("read_at_ms", INT64, True), Column("isolation", STRING, True, values=("read_committed", "read_uncommitted")),
)
TXN_STATE_KINDS = ("sampler", "transaction", "producers", "unknown", "sampler_end")
TXN_STATES = (  # transaction-states.jsonl: a transactional run's transactions and open transactions (harness/group_sampler.py)
    Column("ts_ms", INT64, True), Column("kind", STRING, True, values=TXN_STATE_KINDS), Column("since_ms", INT64),
    Column("interval_ms", INT64, min=1), Column("api", STRING), Column("samples", INT64, min=0),
    # transaction: its coordinator's description
    Column("transactional_id", STRING), Column("state", STRING), Column("producer_id", INT64),
    Column("producer_epoch", INT64), Column("timeout_ms", INT64), Column("start_ms", INT64), Column("coordinator", STRING),
    # producers: one output partition's open transactions, as its leader holds them (a list of producer_id,
    # producer_epoch, txn_start_offset); partitions is a transaction's ("topic:partition" each), partition a producers row's
    Column("partition", STRING), Column("partitions", LIST), Column("leader", STRING), Column("open", LIST),
    Column("error", STRING),
)
SPECS = {"produced": PRODUCED, "consumed": CONSUMED, "events": EVENTS, "faults": FAULTS, "group": GROUP,
         "group_states": GROUP_STATES, "state": STATE, "final_state": FINAL_STATE,
         "transactions": TRANSACTIONS, "verified": VERIFIED, "transaction_states": TXN_STATES}
# The columns the analysis reads from the record logs (a Parquet footer is checked for all contract columns;
# JSON lines are parsed only for these).
READ = {
    "produced": ("topic", "partition", "offset", "acked_at_ms", "status", "producer_id", "seq"),
    "consumed": ("topic", "partition", "offset", "member", "consumed_at_ms", "generation", "producer_id", "seq", "n"),
}
TIME_COLUMN = {"produced": "acked_at_ms", "consumed": "consumed_at_ms"}
TYPE_WORDS = {STRING: "string", INT32: "int32", INT64: "int64", LIST: "a list", OBJECT: "an object", BOOL: "true or false"}


def spec(table: str, name: str) -> Column:
    for column in SPECS[table]:
        if column.name == name:
            return column
    raise KeyError(name)


def describe(value) -> str:
    kind = {str: "a string", float: "a float", bool: "a boolean", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
    text = json.dumps(value)
    return f"{text[:37] + '...' if len(text) > 40 else text} ({kind})"


def _type_ok(value, typ: str) -> bool:
    if typ == STRING:
        return not isinstance(value, (dict, list))  # any scalar is kept as its text
    if typ == LIST:
        return isinstance(value, list)
    if typ == OBJECT:
        return isinstance(value, dict)
    if typ == BOOL:
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return -2**31 <= value < 2**31 if typ == INT32 else -2**63 <= value < 2**63


def _rule(column: Column, value, status) -> str | None:
    """What is wrong with one value of a column (None: nothing)."""
    if value is None:
        if column.required and not (column.if_ok and status not in (None, "ok")):
            return "is missing"
        return None
    if column.values is not None and value not in column.values:
        return f"has {describe(value)}, expected one of {'/'.join(column.values)}"
    if column.min is not None and value < column.min:
        return f"has {value}, expected a value >= {column.min}"
    return None


def _error(where: str, column: Column, problem: str) -> InputError:
    word = "required column" if problem in ("is missing", "is null") else "column"
    return InputError(f"{where}: {word} '{column.name}' {problem}")


def check_object(table: str, obj: dict, where: str, columns=None) -> None:
    """One JSON line (``where`` = "file:line"): raises InputError for its first problem."""
    status = obj.get("status")
    for column in SPECS[table]:
        if columns is not None and column.name not in columns:
            continue
        value = obj.get(column.name)
        if value is None and not column.required:
            continue
        if value is not None and not _type_ok(value, column.type):
            raise _error(where, column, f"has {describe(value)}, expected {TYPE_WORDS[column.type]}")
        problem = _rule(column, value, status if isinstance(status, str) else None)
        if problem:
            raise _error(where, column, "is null" if problem == "is missing" and column.name in obj else problem)


def first_problem(table: str, data) -> tuple[int, str] | None:
    """(row index, message) of the first row of a pyarrow table (contract types) that breaks a rule, or None.
    Vectorised: only a table with a problem is looked at row by row."""
    import pyarrow.compute as pc
    names = set(data.column_names)
    status = data.column("status") if "status" in names else None
    bad = None
    for column in SPECS[table]:
        if column.name not in names:
            if column.required:
                return 0, f"required column '{column.name}' is missing"
            continue
        v = data.column(column.name)
        checks = []
        if column.required:
            missing = pc.is_null(v)
            if column.if_ok and status is not None:
                missing = pc.and_(missing, pc.or_(pc.is_null(status), pc.equal(status, "ok")))
            checks.append(missing)
        if column.values is not None:
            checks.append(pc.invert(pc.fill_null(pc.is_in(v, value_set=_array(column.values)), True)))
        if column.min is not None:
            checks.append(pc.fill_null(pc.less(v, column.min), False))
        for c in checks:
            bad = c if bad is None else pc.or_(bad, c)
    if bad is None or not pc.any(bad).as_py():
        return None
    i = pc.index(bad, True).as_py()
    row = data.slice(i, 1).to_pylist()[0]
    for column in SPECS[table]:
        problem = _rule(column, row.get(column.name), row.get("status")) if column.name in names else None
        if problem:
            return i, str(_error("", column, "is null" if problem == "is missing" else problem))[2:]
    return i, "malformed row"


def _array(values):
    import pyarrow as pa
    return pa.array(values, pa.string())
