"""coordinator.log: what the group's coordinator logged about the run's group (DESIGN.md, the run directory).

The brokers' logs are saved whole into logs/ at the run's end; a sweep's brokers serve many groups, and a failover
moves the group to another broker. This keeps the group coordinator's lines that name the run's group, from every
broker, in time order: each JoinGroup/SyncGroup round (its reason, its generation, its leader, the members removed
for not rejoining), and each KIP-848 epoch (its cause, the target assignment and what computing it took).
analysis/rundir/coordinator_log.py reads it. Beside them, the transaction coordinators' lines of the run's
transactional ids (`<group id>-...`): each id's InitProducerId (producer id, epoch, its __transaction_state
partition), a transaction rolled back on its time-out, and each move of those partitions' coordinator (elected,
resigned).
"""
from __future__ import annotations

import re
from pathlib import Path

from analysis.api import coordinator_log as reader

FILE, STAMP, TXN_STAMP = reader.FILE, reader.STAMP, reader.TXN_STAMP  # the file, a coordinator's line: the reader's own
TXN_PARTITION = re.compile(r"on partition __transaction_state-(\d+)")
TXN_MOVE = re.compile(r"(?:Elected|Resigned) as the txn coordinator for partition (\d+) ")


def group_lines(text: str, group_id: str) -> list[str]:
    """The coordinator's lines of one broker's log that name ``group_id`` (as a whole word: chaos-group-1 is not
    chaos-group-12)."""
    named = re.compile(rf"(?<![\w.-]){re.escape(group_id)}(?![\w.-])")
    return [line for line in text.splitlines() if STAMP.match(line) and named.search(line)]


def transaction_lines(text: str, group_id: str) -> list[str]:
    """The transaction coordinator's lines of one broker's log that name a transactional id of the run's
    (``group_id-...``), and the moves of the __transaction_state partitions those ids live on (as the lines naming
    an id say them)."""
    named = re.compile(rf"(?<![\w.-]){re.escape(group_id)}-[\w.-]+")
    lines = [line for line in text.splitlines() if TXN_STAMP.match(line)]
    mine = [line for line in lines if named.search(line)]
    partitions = {m.group(1) for line in mine if (m := TXN_PARTITION.search(line))}
    return [line for line in lines if line in mine or ((m := TXN_MOVE.search(line)) and m.group(1) in partitions)]


def write(run_dir: Path, group_id: str, logs_dir: str = "logs") -> int | None:
    """Write coordinator.log from the brokers' saved logs (logs/kafka-*.log), the lines of every broker in time
    order (a stable sort: one broker's lines of one millisecond keep their order). Returns how many lines; None,
    and no file, when no broker's log was saved (an external cluster's are its owner's)."""
    paths = sorted((run_dir / logs_dir).glob("kafka-*.log"))
    if not paths:
        return None
    lines: list[str] = []
    for path in paths:
        text = path.read_text(errors="replace")
        lines += group_lines(text, group_id) + transaction_lines(text, group_id)
    lines.sort(key=lambda line: (STAMP.match(line) or TXN_STAMP.match(line)).group(1))
    (run_dir / FILE).write_text("".join(f"{line}\n" for line in lines))
    return len(lines)
