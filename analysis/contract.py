"""Run-directory contract v1 (DESIGN.md): the columns the analysis reads and their types."""
from __future__ import annotations

from dataclasses import dataclass

STRING, INT32, INT64 = "string", "int32", "int64"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    required: bool = False


PRODUCED = (
    Column("topic", STRING, True), Column("partition", INT32, True), Column("offset", INT64, True),
    Column("acked_at_ms", INT64, True), Column("key", STRING), Column("producer_id", STRING),
    Column("seq", INT64), Column("status", STRING),
)
CONSUMED = (
    Column("topic", STRING, True), Column("partition", INT32, True), Column("offset", INT64, True),
    Column("member", STRING, True), Column("consumed_at_ms", INT64, True), Column("key", STRING),
    Column("producer_id", STRING), Column("seq", INT64), Column("instance_id", STRING),
    Column("generation", INT32), Column("client", STRING),
)
# The columns the analysis actually reads (a parquet footer is checked for all contract columns; JSON lines
# are parsed only for these).
READ = {
    "produced": ("topic", "partition", "offset", "acked_at_ms", "status", "producer_id", "seq"),
    "consumed": ("topic", "partition", "offset", "member", "consumed_at_ms", "generation", "producer_id", "seq"),
}
SPECS = {"produced": PRODUCED, "consumed": CONSUMED}
TIME_COLUMN = {"produced": "acked_at_ms", "consumed": "consumed_at_ms"}

STATUSES = ("ok", "fail", "info")
EVENT_KINDS = ("started", "assigned", "revoked", "lost", "committed", "commit_failed", "fenced", "stopped",
               "crashed", "error")
RECORD_SUFFIXES = (".parquet", ".jsonl")


def spec(table: str, name: str) -> Column:
    for column in SPECS[table]:
        if column.name == name:
            return column
    raise KeyError(name)
