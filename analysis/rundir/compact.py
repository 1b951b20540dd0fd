"""Rewrite the JSONL record logs of a run directory (produced/, consumed/) as Parquet.

Members append JSONL while they run, because a line is durable the moment it is flushed. Once they have
stopped, the same rows as Parquet are about 14x smaller and the analysis of a 10M-record run is 4-7x faster
(docs/benchmarks-history.md, "Analysis against DuckDB"). Nothing is lost: every column is kept (the contract's with
their contract types, any extra one with the type pyarrow infers), the row order is kept (the record-level checks use
it), and the JSONL file is removed only after the Parquet file holds as many rows as it had lines. A file with anything
the analysis would report (a line that is not JSON, a wrong type, a missing required value, an unknown
status) is left as it is, so that the analysis names the line. events/ stay JSONL: they are small.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from analysis.rundir import contract
from analysis.rundir.inputs import rel

ARROW_TYPES = {contract.STRING: "string", contract.INT32: "int32", contract.INT64: "int64"}
SOURCE_KEY = b"kafka_chaos.compacted_from"  # Parquet key-value metadata: "<jsonl name> <bytes>"


@dataclass
class Compaction:
    converted: list[str] = field(default_factory=list)        # the JSONL files now Parquet (run-relative)
    left: dict[str, str] = field(default_factory=dict)         # file -> why it stays JSONL
    bytes_before: int = 0
    bytes_after: int = 0
    rows: int = 0

    def lines(self) -> list[str]:
        """What was done, for people: one line, and one more per file left as JSONL."""
        return ([f"compacted {len(self.converted)} file(s), {self.rows:,} rows: "
                 f"{_size(self.bytes_before)} of JSONL -> {_size(self.bytes_after)} of Parquet"]
                + [f"left as JSONL: {name}: {why}" for name, why in self.left.items()])


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.1f} kB"


def compact(run_dir, tables=("produced", "consumed")) -> Compaction:
    """Convert every ``*.jsonl`` of the given tables to ``*.parquet`` beside it; see the module docstring."""
    run_dir = Path(run_dir)
    out = Compaction()
    for table in tables:
        folder = run_dir / table
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.jsonl")):
            why = _compact_file(run_dir, table, path, out)
            if why:
                out.left[rel(run_dir, path)] = why
    return out


def schema(table: str):
    """The contract's columns of a table as a pyarrow schema."""
    import pyarrow as pa
    return pa.schema([(c.name, getattr(pa, ARROW_TYPES[c.type])()) for c in contract.SPECS[table]])


def _compact_file(run_dir: Path, table: str, path: Path, out: Compaction) -> str | None:
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    target = path.with_suffix(".parquet")
    size = path.stat().st_size
    stamp = f"{path.name} {size}".encode()
    if target.exists():  # a compaction stopped between its rename and its unlink, or a name clash
        if _stamp(target) != stamp:
            return f"{rel(run_dir, target)} exists already"
        path.unlink()
        out.converted.append(rel(run_dir, path))
        return None
    try:
        data = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema(table),
                                                                unexpected_field_behavior="infer"))
    except Exception as exc:  # not JSON, a truncated line, a wrong type: the analysis will name the line
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lines = line_count(path)
    if data.num_rows != lines:
        lines = line_count(path, exact=True)
    if data.num_rows != lines:
        return f"{data.num_rows} rows parsed from {lines} lines"
    problem = contract.first_problem(table, data)
    if problem:
        return f"line {problem[0] + 1}: {problem[1]}"
    data = data.replace_schema_metadata({**(data.schema.metadata or {}), SOURCE_KEY: stamp})
    partial = target.with_name(target.name + ".partial")  # not *.parquet: never read half-written
    pq.write_table(data, partial, row_group_size=256 * 1024)
    with open(partial, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(partial, target)
    path.unlink()
    out.converted.append(rel(run_dir, path))
    out.rows += data.num_rows
    out.bytes_before += size
    out.bytes_after += target.stat().st_size
    return None


def line_count(path: Path, exact: bool = False) -> int:
    """Lines holding a row (the rows pyarrow should find): newlines, plus an unterminated last line; with
    ``exact``, blank lines are not counted (slower; only when the quick count disagrees)."""
    if exact:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _stamp(target: Path) -> bytes | None:
    import pyarrow.parquet as pq
    try:
        return (pq.read_schema(target).metadata or {}).get(SOURCE_KEY)
    except Exception:
        return None
