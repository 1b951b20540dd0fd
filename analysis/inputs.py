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

from . import contract
from .contract import INT32, INT64, STRING
from .errors import InputError

SPARK_TYPE = {STRING: "string", INT32: "int", INT64: "bigint"}
TYPE_WORDS = {STRING: "string", INT32: "int32", INT64: "int64"}


@dataclass
class Source:
    """One group of files read by one Spark reader (same format, same column types)."""
    fmt: str                      # "parquet" or "jsonl"
    files: list[Path]
    raw: object                   # the DataFrame as read (JSON: with the _corrupt column)
    present: tuple[str, ...]      # contract columns the files have (JSON: all that are read)


@dataclass
class Records:
    table: str                    # "produced" or "consumed"
    run_dir: Path
    files: list[Path]
    df: object                    # canonical columns + ts + _bad (see canonical())
    sources: list[Source]
    bytes: int
    columns: set[str] = field(default_factory=set)  # contract columns present in at least one file

    def has(self, column: str) -> bool:
        return column in self.columns

    def with_order(self, condition: str | None = None):
        """The rows matching the SQL ``condition`` plus _file, _block, _row: their order inside each member's
        file. Parquet: the condition is pushed down to the reader and _row is the row index in the file;
        JSON: _row is a per-split counter, so the condition is applied after numbering the rows."""
        df = None
        for source in self.sources:
            part = _canonical(source, self.table, with_order=True, condition=condition)
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


_SCHEMAS: dict[tuple, dict] = {}


def _parquet_schema(run_dir: Path, table: str, path: Path) -> dict[str, str | None]:
    """contract column -> Spark type to read it as (None: all-null column). Raises InputError.
    Cached per (file, size, mtime): precheck and load read each footer once."""
    st = path.stat()
    key = (str(path), table, st.st_size, st.st_mtime_ns)
    if key not in _SCHEMAS:
        if len(_SCHEMAS) > 10_000:
            _SCHEMAS.clear()
        _SCHEMAS[key] = _read_parquet_schema(run_dir, table, path)
    return _SCHEMAS[key]


def _read_parquet_schema(run_dir: Path, table: str, path: Path) -> dict[str, str | None]:
    import pyarrow.parquet as pq
    try:
        schema = pq.read_schema(path)
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
                             f"expected {TYPE_WORDS[column.type]}")
        else:
            found[column.name] = _spark_type_for_arrow(pa_type)
    return found


def _read_parquet(spark, run_dir: Path, table: str, files: list[Path]) -> list[Source]:
    groups: dict[tuple, list[Path]] = {}
    for path in files:
        found = _parquet_schema(run_dir, table, path)
        key = tuple((c, found[c]) for c in contract.READ[table] if c in found and found[c] is not None)
        groups.setdefault(key, []).append(path)
    sources = []
    for key, paths in groups.items():
        ddl = ", ".join(f"`{c}` {t}" for c, t in key)
        raw = spark.read.schema(ddl).parquet(*[str(p) for p in paths])
        sources.append(Source("parquet", paths, raw, tuple(c for c, _ in key)))
    return sources


def exact_values(path: Path, column: str) -> set | None:
    """The distinct values of a string column from the Parquet footer, when every row group's statistics
    pin it down (min == max, or all null); None when the footer cannot tell."""
    import pyarrow.parquet as pq
    try:
        md = pq.ParquetFile(path).metadata
    except Exception:
        return None
    names = [md.schema.column(i).name.lower() for i in range(md.num_columns)]
    if column not in names:
        return None
    j = names.index(column)
    values: set = set()
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        if rg.num_rows == 0:
            continue
        st = rg.column(j).statistics
        if st is None:
            return None
        if st.null_count:
            values.add(None)
        if st.null_count == rg.num_rows:
            continue
        if not st.has_min_max or st.min != st.max:
            return None
        v = st.min
        values.add(v.decode() if isinstance(v, bytes) else v)
    return values


def name_candidates(records: "Records") -> set | None:
    """(topic, member) pairs present in the files, read from Parquet footers; None if not all files are
    Parquet with telling statistics. produced rows carry member None."""
    out: set = set()
    for path in records.files:
        if path.suffix != ".parquet":
            return None
        topics = exact_values(path, "topic")
        if topics is None:
            return None
        if records.table == "consumed":
            members = exact_values(path, "member")
            if members is None:
                return None
            out |= {(t, m) for t in topics for m in members}
            out |= {(t, None) for t in topics}  # bad rows with a null member
        else:
            out |= {(t, None) for t in topics}
    return out


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
def bad_sql(table: str, fmt: str) -> str:
    """SQL for an int column: null for a good row, else a code (1 malformed/wrong type, 2 required value
    missing, 3 unknown status, 4 negative partition/offset). Built as one SQL string: every Column method
    call is a round trip to the JVM, which adds up on a small run."""
    if table == "produced":
        missing = ("topic IS NULL OR acked_at_ms IS NULL OR ((status IS NULL OR status = 'ok') "
                   "AND (`partition` IS NULL OR `offset` IS NULL))")
        statuses = ", ".join(f"'{x}'" for x in contract.STATUSES)
        status_bad = f"status IS NOT NULL AND status NOT IN ({statuses})"
    else:
        missing = "topic IS NULL OR `partition` IS NULL OR `offset` IS NULL OR member IS NULL OR consumed_at_ms IS NULL"
        status_bad = "false"
    expr = f"CASE WHEN {missing} THEN 2 WHEN {status_bad} THEN 3 WHEN `partition` < 0 OR `offset` < 0 THEN 4 END"
    if fmt == "jsonl":
        expr = f"CASE WHEN _corrupt IS NOT NULL THEN 1 ELSE {expr} END"
    return f"CAST({expr} AS INT)"


def _bad_expr(table: str, fmt: str):
    from pyspark.sql import functions as F
    return F.expr(bad_sql(table, fmt))


def _canonical(source: Source, table: str, with_order: bool = False, condition: str | None = None):
    df = source.raw
    cols = []
    if with_order:  # file order, for the record-level drill-down only
        if condition:
            # pushed down to the reader (Parquet: row groups skipped on offset statistics; JSON: rows dropped
            # as soon as their fields are parsed). Filtering keeps the order of rows inside a split, so a
            # counter numbered after the filter still orders them within (_file, _block).
            df = df.where(condition)
        if source.fmt == "parquet":
            cols += ["_metadata.file_path AS _file", "CAST(0 AS BIGINT) AS _block", "_metadata.row_index AS _row"]
        else:
            cols += ["_metadata.file_path AS _file", "_metadata.file_block_start AS _block",
                     "monotonically_increasing_id() AS _row"]
    for name in contract.READ[table]:
        typ = SPARK_TYPE[contract.spec(table, name).type]
        cols.append(f"CAST(`{name}` AS {typ}) AS `{name}`" if name in source.present else f"CAST(NULL AS {typ}) AS `{name}`")
    if source.fmt == "jsonl":
        cols.append("_corrupt")
    names = [c.split(" AS ")[-1].strip("`") for c in cols if c != "_corrupt"]
    df = df.selectExpr(*cols)
    return df.selectExpr(*[f"`{n}`" for n in names], f"{bad_sql(table, source.fmt)} AS _bad",
                         f"`{contract.TIME_COLUMN[table]}` AS ts")


def precheck(run_dir: Path, table: str) -> list[Path]:
    """Everything that can be checked without Spark (so bad input fails before the JVM starts): the folder,
    its files, their readability and every Parquet footer."""
    run_dir = Path(run_dir)
    files = list_files(run_dir, table)
    for path in files:
        if path.suffix == ".parquet":
            _parquet_schema(run_dir, table, path)
        else:
            try:
                with open(path, "rb") as fh:
                    fh.read(1)
            except OSError as exc:
                raise InputError(f"{rel(run_dir, path)}: unreadable file ({exc.strerror or exc})") from exc
    return files


def load(spark, run_dir: Path, table: str) -> Records:
    """Lazy DataFrame over every file of produced/ or consumed/. Raises InputError on what can be
    seen without reading data (missing folder, no files, unreadable file, Parquet footer problems)."""
    run_dir = Path(run_dir)
    files = list_files(run_dir, table)
    parquet = [p for p in files if p.suffix == ".parquet"]
    jsonl = [p for p in files if p.suffix == ".jsonl"]
    sources: list[Source] = []
    present: set[str] = set()
    if parquet:
        sources.extend(_read_parquet(spark, run_dir, table, parquet))
        for s in sources:
            present.update(s.present)
    if jsonl:
        for path in jsonl:
            try:
                with open(path, "rb") as fh:
                    fh.read(1)
            except OSError as exc:
                raise InputError(f"{rel(run_dir, path)}: unreadable file ({exc.strerror or exc})") from exc
        sources.append(_read_json(spark, table, jsonl))
        present.update(_json_columns_present(jsonl, contract.READ[table]))
    df = None
    for source in sources:
        part = _canonical(source, table)
        df = part if df is None else df.unionByName(part)
    size = sum(p.stat().st_size for p in files)
    return Records(table, run_dir, files, df, sources, size, present)


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
        bad = _bad_expr(records.table, source.fmt)
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


def _json_type_ok(value, typ: str) -> bool:
    if value is None:
        return True
    if typ == STRING:
        return True  # Spark keeps any scalar as its text
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return -2**31 <= value < 2**31 if typ == INT32 else -2**63 <= value < 2**63


def _describe(value) -> str:
    kind = {str: "a string", float: "a float", bool: "a boolean", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
    text = json.dumps(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({kind})"


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
    table, name = records.table, rel(records.run_dir, path)
    warnings: list[str] = []
    for number, obj in jsonl_objects(records.run_dir, path, warnings):
        status = obj.get("status")
        for column in contract.SPECS[table]:
            if column.name not in contract.READ[table]:
                continue
            value = obj.get(column.name)
            if not _json_type_ok(value, column.type):
                raise InputError(f"{name}:{number}: column '{column.name}' has {_describe(value)}, "
                                 f"expected {TYPE_WORDS[column.type]}")
        if table == "produced" and status is not None and status not in contract.STATUSES:
            raise InputError(f"{name}:{number}: column 'status' has {_describe(status)}, expected one of ok/fail/info")
        for column in contract.SPECS[table]:
            if not column.required:
                continue
            if table == "produced" and column.name in ("partition", "offset") and status not in (None, "ok"):
                continue
            if obj.get(column.name) is None:
                what = "is missing" if column.name not in obj else "is null"
                raise InputError(f"{name}:{number}: required column '{column.name}' {what}")
        for column in ("partition", "offset"):
            value = obj.get(column)
            if isinstance(value, int) and value < 0:
                raise InputError(f"{name}:{number}: column '{column}' has {value}, expected a value >= 0")
    if warnings:  # the only bad line was a truncated last one
        return warnings[0]
    raise InputError(f"{name}: malformed row (code {row['_code']})")


def _diagnose_parquet(records: Records, path: Path, code: int) -> None:
    import pyarrow.parquet as pq
    table, name = records.table, rel(records.run_dir, path)
    data = pq.read_table(path)
    names = {n.lower(): n for n in data.column_names}
    col = lambda c: data.column(names[c]).to_pylist() if c in names else [None] * data.num_rows  # noqa: E731
    status = col("status") if table == "produced" else [None] * data.num_rows
    for column in contract.SPECS[table]:
        if not column.required:
            continue
        values = col(column.name)
        for i, value in enumerate(values):
            if value is None and not (table == "produced" and column.name in ("partition", "offset")
                                      and status[i] not in (None, "ok")):
                raise InputError(f"{name}: required column '{column.name}' is null in row {i + 1}")
    for i, value in enumerate(status):
        if value is not None and value not in contract.STATUSES:
            raise InputError(f"{name}: column 'status' has {_describe(value)} in row {i + 1}, expected one of ok/fail/info")
    for column in ("partition", "offset"):
        for i, value in enumerate(col(column)):
            if value is not None and value < 0:
                raise InputError(f"{name}: column '{column}' has {value} in row {i + 1}, expected a value >= 0")
    raise InputError(f"{name}: malformed row (code {code})")
