"""Reading produced/ and consumed/ (Parquet, JSONL or both) into Spark, and turning bad input into InputError.

Validation costs nothing on good input: Parquet footers are checked on the driver (no data read), and
JSON type errors, missing required values and unknown statuses are counted inside the one aggregation
pass (rows flagged by ``_bad``). Only when that count is not zero does :func:`diagnose` look for the
first offending file, line and column.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from analysis.rundir import contract
from analysis.rundir.contract import INT32, INT64, STRING
from analysis.errors import InputError

SPARK_TYPE = {STRING: "string", INT32: "int", INT64: "bigint"}


@dataclass
class Source:
    """One group of files read by one Spark reader (same format, same column types)."""
    fmt: str                      # "parquet" or "jsonl"
    files: list[Path]
    raw: object                   # the DataFrame as read (JSON: with the _corrupt column)
    present: tuple[str, ...]      # contract columns the files have (JSON: all that are read)
    proven: frozenset = frozenset()  # bad_sql rules every row is known to keep (Parquet statistics)


@dataclass
class Records:
    table: str                    # "produced" or "consumed"
    run_dir: Path
    files: list[Path]
    df: object                    # canonical columns + ts + _bad (see canonical())
    sources: list[Source]
    columns: set[str] = field(default_factory=set)  # contract columns present in at least one file
    in_every_file: set[str] = field(default_factory=set)  # contract columns every file carries (JSONL: its first lines)

    @property
    def file_id(self) -> str:
        """SQL: a 64-bit id of the file a row comes from (``_fh``): its name's hash when no two files share a
        name (a short string to hash a row), else its path's."""
        unique = len({p.name for p in self.files}) == len(self.files)
        return f"xxhash64(_metadata.{'file_name' if unique else 'file_path'})"

    def has(self, column: str) -> bool:
        return column in self.columns

    def rows(self, condition: str | dict | None = None, needs: tuple[str, ...] = ()):
        """The rows matching the SQL ``condition`` (pushed down to the reader: Parquet row groups skipped on
        their statistics, JSON rows dropped once parsed), with their place in the log (_fh, _blk, _pos).
        ``condition`` may be one per format ({"parquet": ..., "jsonl": ...}; None: no row of that format), for
        conditions only one reader can evaluate (Parquet's ``_metadata.row_index``). ``needs``: the optional
        columns the condition reads and holds false on null (``status = 'unplaced'``, a key's ``producer_id IN``):
        a source without one of them gives no row (its files lack the column, which its reader cannot filter on)."""
        df = None
        for source in self.sources:
            missing = any(c not in source.present for c in needs)
            part = _canonical(source, self.table, self.file_id, "false" if missing else condition)
            df = part if df is None else df.unionByName(part)
        return df


def rel(run_dir: Path, path: Path) -> str:
    try:
        return str(path.relative_to(run_dir))
    except ValueError:
        return str(path)


def list_files(run_dir: Path, table: str) -> list[Path]:
    folder = run_dir / table
    if not folder.exists():
        raise InputError(f"{table}/: folder is missing (run-directory contract v1 needs produced/ and consumed/)")
    if not folder.is_dir():
        raise InputError(f"{table}/: is not a folder")
    try:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in contract.RECORD_SUFFIXES)
    except OSError as exc:
        raise InputError(f"{table}/: cannot be listed ({exc.strerror or exc})") from exc
    if not files:
        raise InputError(f"{table}/: no *.parquet or *.jsonl files")
    for path in files:
        if not os.access(path, os.R_OK):
            raise InputError(f"{rel(run_dir, path)}: unreadable file (permission denied)")
    return files


# ---------------------------------------------------------------------------------------------- Parquet
def _arrow_kind(pa_type) -> str | None:
    import pyarrow as pa
    t = pa_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return STRING
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_null(t):
        return "null"
    return None


def _spark_type_for_arrow(pa_type) -> str:
    import pyarrow as pa
    t = pa_type.value_type if pa.types.is_dictionary(pa_type) else pa_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
            pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)"}[t]


@dataclass(frozen=True)
class Footer:
    """What a Parquet file's footer says: contract column -> Spark type to read it as (None: an all-null
    column), and the rules (column, bad_sql code) its statistics prove for every row, so that no row is
    checked for them."""
    types: dict
    proven: frozenset


_FOOTERS: dict[tuple, Footer] = {}


def _parquet_footer(run_dir: Path, table: str, path: Path) -> Footer:
    """Raises InputError. Cached per (file, size, mtime): precheck and load read each footer once."""
    st = path.stat()
    key = (str(path), table, st.st_size, st.st_mtime_ns)
    if key not in _FOOTERS:
        if len(_FOOTERS) > 10_000:
            _FOOTERS.clear()
        _FOOTERS[key] = _read_parquet_footer(run_dir, table, path)
    return _FOOTERS[key]


def _read_parquet_footer(run_dir: Path, table: str, path: Path) -> Footer:
    import pyarrow.parquet as pq
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except Exception as exc:  # not a Parquet file, truncated footer, I/O error
        raise InputError(f"{rel(run_dir, path)}: unreadable Parquet file ({str(exc).splitlines()[0]})") from exc
    names = {name.lower(): name for name in schema.names}
    found: dict[str, str | None] = {}
    for column in contract.SPECS[table]:
        name = names.get(column.name)
        if name is None:
            if column.required:
                raise InputError(f"{rel(run_dir, path)}: required column '{column.name}' is missing")
            continue
        pa_type = schema.field(name).type
        kind = _arrow_kind(pa_type)
        expected = "integer" if column.type in (INT32, INT64) else STRING
        if kind == "null":
            if column.required:
                raise InputError(f"{rel(run_dir, path)}: required column '{column.name}' has no values (type null)")
            found[column.name] = None
        elif kind != expected:
            raise InputError(f"{rel(run_dir, path)}: column '{column.name}' has type {pa_type}, "
                             f"expected {contract.TYPE_WORDS[column.type]}")
        elif not column.required and _all_null(meta, name):
            found[column.name] = None  # as if absent: compact writes every contract column, e.g. n of an older log
        else:
            found[column.name] = _spark_type_for_arrow(pa_type)
    return Footer(found, _proven_rules(meta, table, names))


def _all_null(meta, name: str) -> bool:
    """Every row group's statistics say the column holds only nulls."""
    i = next((k for k in range(meta.num_columns) if meta.schema.column(k).path == name), None)
    if i is None or meta.num_rows == 0:
        return False
    stats = [(meta.row_group(g).column(i).statistics, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
    return all(st is not None and st.has_null_count and st.null_count == rows for st, rows in stats)


def _proven_rules(meta, table: str, names: dict[str, str]) -> frozenset:
    """The (column, code) rules of bad_sql that every row group's statistics prove: no null in a required
    column (code 2), a minimum at or above the column's (code 4). Statistics Parquet writes are exact."""
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
    proven = set()
    for column in contract.SPECS[table]:
        i = index.get(names.get(column.name))
        if i is None:
            if not column.required and column.min is not None:
                proven.add((column.name, 4))  # an optional column the file lacks (n in an older run) is never below it
            continue
        stats = [(g.column(i).statistics, g.num_rows) for g in groups]
        if all(st is not None and st.has_null_count and st.null_count == 0 for st, _ in stats):
            proven.add((column.name, 2))
        if column.min is not None and all(st is not None and ((st.has_min_max and st.min >= column.min) or
                                                              (st.has_null_count and st.null_count == rows))
                                          for st, rows in stats):  # a row group of nulls only has no minimum
            proven.add((column.name, 4))
    return frozenset(proven)


def _read_parquet(spark, run_dir: Path, table: str, files: list[Path]) -> list[Source]:
    groups: dict[tuple, list[Path]] = {}
    for path in files:
        found = _parquet_footer(run_dir, table, path).types
        key = tuple((c, found[c]) for c in contract.READ[table] if c in found and found[c] is not None)
        groups.setdefault(key, []).append(path)
    sources = []
    for key, paths in groups.items():
        ddl = ", ".join(f"`{c}` {t}" for c, t in key)
        raw = spark.read.schema(ddl).parquet(*[str(p) for p in paths])
        proven = frozenset.intersection(*(_parquet_footer(run_dir, table, p).proven for p in paths))
        sources.append(Source("parquet", paths, raw, tuple(c for c, _ in key), proven))
    return sources


# ------------------------------------------------------------------------------------------------- JSON
def _read_json(spark, table: str, files: list[Path]) -> Source:
    cols = contract.READ[table]
    ddl = ", ".join(f"`{c}` {SPARK_TYPE[contract.spec(table, c).type]}" for c in cols) + ", `_corrupt` string"
    raw = (spark.read.schema(ddl)
           .option("mode", "PERMISSIVE")
           .option("columnNameOfCorruptRecord", "_corrupt")
           .json([str(p) for p in files]))
    return Source("jsonl", files, raw, cols)


# ------------------------------------------------------------------------------------------- canonical
def bad_sql(table: str, fmt: str, proven: frozenset = frozenset(), present=None) -> str:
    """SQL for the ``_bad`` column: null for a good row, else a code (1 not JSON / wrong type, 2 required value
    missing, 3 value not allowed, 4 below its minimum), from the contract's rules (contract.SPECS), but for the
    (column, code) rules ``proven`` for every row (by Parquet statistics): good input costs only what no
    footer can prove. Only a non-zero count of bad rows sends diagnose() to contract.check_object /
    first_problem for the message. ``present``: the columns the rows have (None: all that are read; an optional
    column a file lacks has no rule to break)."""
    cases = []
    for c in contract.SPECS[table]:
        if c.name not in contract.READ[table] or (present is not None and not c.required and c.name not in present):
            continue
        col = f"`{c.name}`"
        if c.required:
            cases.append((2, c.name, f"{col} IS NULL" + (" AND (status IS NULL OR status = 'ok')" if c.if_ok else "")))
        if c.values:
            cases.append((3, c.name, f"{col} NOT IN ({', '.join(repr(v) for v in c.values)})"))
        if c.min is not None:
            cases.append((4, c.name, f"{col} < {c.min}"))
    if fmt == "jsonl":
        cases.insert(0, (1, None, "_corrupt IS NOT NULL"))
    cases = [(code, cond) for code, name, cond in cases if (name, code) not in proven]
    if not cases:
        return "CAST(NULL AS INT)"
    return "CAST(CASE " + " ".join(f"WHEN {cond} THEN {code}" for code, cond in sorted(cases, key=lambda x: x[0])) + " END AS INT)"


def _canonical(source: Source, table: str, file_id: str, condition: str | None = None):
    """Contract columns with their contract types, ``_bad`` (see bad_sql), ``ts``; for consumed rows also their
    place in the member's log: ``_fh`` (the file, see Records.file_id), ``_blk`` (JSONL: the split's first byte;
    Parquet: -1) and ``_pos`` (Parquet: the row's index in the file; JSONL: increasing inside a split)."""
    if isinstance(condition, dict):
        condition = condition.get(source.fmt) or "false"
    df = source.raw if condition is None else source.raw.where(condition)
    cols = []
    if table == "consumed":
        cols += [f"{file_id} AS _fh"]
        cols += (["-1L AS _blk", "_metadata.row_index AS _pos"] if source.fmt == "parquet" else
                 ["_metadata.file_block_start AS _blk", "monotonically_increasing_id() AS _pos"])
    for name in contract.READ[table]:
        typ = SPARK_TYPE[contract.spec(table, name).type]
        cols.append(f"CAST(`{name}` AS {typ}) AS `{name}`" if name in source.present else f"CAST(NULL AS {typ}) AS `{name}`")
    if source.fmt == "jsonl":
        cols.append("_corrupt")
    names = [c.split(" AS ")[-1].strip("`") for c in cols if c != "_corrupt"]
    df = df.selectExpr(*cols)
    return df.selectExpr(*[f"`{n}`" for n in names], f"{bad_sql(table, source.fmt, source.proven)} AS _bad",
                         f"`{contract.TIME_COLUMN[table]}` AS ts")


def precheck(run_dir: Path, table: str) -> list[Path]:
    """Everything that can be checked without Spark (so bad input fails before the JVM starts): the folder,
    its files, their readability and every Parquet footer."""
    run_dir = Path(run_dir)
    files = list_files(run_dir, table)
    for path in files:
        if path.suffix == ".parquet":
            _parquet_footer(run_dir, table, path)
        else:
            _readable(run_dir, path)
    return files


def _readable(run_dir: Path, path: Path) -> None:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"{rel(run_dir, path)}: unreadable file ({exc.strerror or exc})") from exc


def load(spark, run_dir: Path, table: str) -> Records:
    """Lazy DataFrame over every file of produced/ or consumed/. Raises InputError on what can be
    seen without reading data (missing folder, no files, unreadable file, Parquet footer problems)."""
    run_dir = Path(run_dir)
    files = list_files(run_dir, table)
    parquet = [p for p in files if p.suffix == ".parquet"]
    jsonl = [p for p in files if p.suffix == ".jsonl"]
    sources: list[Source] = []
    per_file: list[set[str]] = []  # the columns of each file (a Parquet source: the columns all its files have)
    if parquet:
        sources.extend(_read_parquet(spark, run_dir, table, parquet))
        per_file += [set(s.present) for s in sources]
    if jsonl:
        for path in jsonl:
            _readable(run_dir, path)
        sources.append(_read_json(spark, table, jsonl))
        per_file += [_json_columns_present([path], contract.READ[table]) for path in jsonl]
    records = Records(table, run_dir, files, None, sources, set().union(*per_file),
                      set.intersection(*per_file))
    records.df = records.rows()
    return records


def _json_columns_present(files: list[Path], columns, probe_lines: int = 50) -> set[str]:
    """Which optional columns the JSON files carry, from the first lines of each file (cheap)."""
    seen: set[str] = set()
    for path in files:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh):
                if i >= probe_lines:
                    break
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    seen.update(k for k in obj if k in columns)
    return seen


# ------------------------------------------------------------------------------------------- diagnosis
def diagnose(records: Records, limit: int = 200) -> list[str]:
    """Called only when the aggregation counted bad rows. Raises InputError for the first real problem;
    returns warnings for what is tolerated (a truncated last line, as a killed member leaves behind)."""
    from pyspark.sql import functions as F
    warnings: list[str] = []
    problems = 0
    for source in records.sources:
        bad = F.expr(bad_sql(records.table, source.fmt, present=source.present))
        raw = source.raw
        cols = [F.col("_metadata.file_path").alias("_file"), bad.alias("_code")]
        if source.fmt == "jsonl":
            cols.append(F.col("_corrupt"))
        rows = raw.select(*cols, *[F.col(c) for c in source.present]).where(bad.isNotNull()).limit(limit).collect()
        for row in rows:
            path = _local_path(row["_file"])
            if source.fmt == "jsonl":
                tolerated = _diagnose_json(records, path, row)
                if tolerated:
                    if tolerated not in warnings:
                        warnings.append(tolerated)
                    continue
            else:
                _diagnose_parquet(records, path, row["_code"])
            problems += 1
    if problems:  # a problem that the file-level diagnosis could not pin down (should not happen)
        raise InputError(f"{records.table}/: {problems} malformed row(s)")
    return warnings


def _local_path(uri: str) -> Path:
    from urllib.parse import unquote, urlparse
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else Path(uri)


def jsonl_objects(run_dir: Path, path: Path, warnings: list[str]):
    """(line number, object) for each line; a truncated last line is tolerated with a warning."""
    name = rel(run_dir, path)
    try:
        with open(path, "r", encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: unreadable file ({getattr(exc, 'strerror', None) or exc})") from exc
    while lines and not lines[-1].strip():
        lines.pop()
    try:  # fast path: the whole file as one JSON array (one C call instead of one per line)
        numbers = [i for i, line in enumerate(lines, 1) if line.strip()]
        objs = json.loads("[" + ",".join(lines[i - 1] for i in numbers) + "]")
        if len(objs) == len(numbers) and all(isinstance(o, dict) for o in objs):
            yield from zip(numbers, objs)
            return
    except ValueError:
        pass
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if number == len(lines):
                warnings.append(f"{name}:{number}: last line is truncated (not valid JSON); ignored")
                continue
            raise InputError(f"{name}:{number}: not valid JSON")
        if not isinstance(obj, dict):
            raise InputError(f"{name}:{number}: not a JSON object")
        yield number, obj



def _diagnose_json(records: Records, path: Path, row) -> str | None:
    """Raise InputError for the first bad line of this file, or return a warning for a truncated last line."""
    warnings: list[str] = []
    name = rel(records.run_dir, path)
    for number, obj in jsonl_objects(records.run_dir, path, warnings):
        contract.check_object(records.table, obj, f"{name}:{number}", contract.READ[records.table])
    if warnings:  # the only bad line was a truncated last one
        return warnings[0]
    raise InputError(f"{name}: malformed row (code {row['_code']})")


def _diagnose_parquet(records: Records, path: Path, code: int) -> None:
    import pyarrow.parquet as pq
    name, f = rel(records.run_dir, path), pq.ParquetFile(path)
    columns = [c for c in f.schema_arrow.names if c.lower() in contract.READ[records.table]]
    first = 0
    for group in range(f.num_row_groups):
        data = f.read_row_group(group, columns=columns)
        data = data.rename_columns([c.lower() for c in data.column_names])
        found = contract.first_problem(records.table, data)
        if found:
            raise InputError(f"{name}: {found[1]} in row {first + found[0] + 1} (row group {group + 1})")
        first += data.num_rows
    raise InputError(f"{name}: malformed row (code {code})")
