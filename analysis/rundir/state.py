"""A stateful run's state files (the scenario's `state` block; docs/DESIGN.md, "State"): state/<member>.jsonl, one row a
change a member applied, and state/final.jsonl, each key's last changelog value as the harness read it after the drain.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.rundir import contract

FINAL_FILE = "final.jsonl"  # harness/state.py writes it


@dataclass
class StateFiles:
    rows: object        # pyarrow.Table: every member's state rows (the contract's columns)
    final: object       # pyarrow.Table: partition, key, count, sum, last_offset (keys still at zero left out)
    members: list[str]  # the members that wrote a state file


def read(run_dir: Path) -> StateFiles | None:
    """The state files as tables, each line checked against the contract; None when the run kept no state (no
    state/)."""
    folder = run_dir / "state"
    if not folder.is_dir():
        return None
    final_path = folder / FINAL_FILE
    if not final_path.exists():
        raise InputError(f"{final_path}: missing: a run with state/ has its final state read back there")
    import pyarrow as pa

    from analysis.rundir.compact import schema
    tables, members = [], []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name == FINAL_FILE:
            continue
        members.append(path.stem)
        tables.append(_lines(path, "state", run_dir))
    rows = pa.concat_tables(tables) if tables else schema("state").empty_table()
    return StateFiles(rows, _lines(final_path, "final_state", run_dir), members)


def _lines(path: Path, table: str, run_dir: Path):
    """The file's rows: read whole by pyarrow against the contract's types and checked by the contract's vectorised
    rules (contract.first_problem); a file that does not read so (a line not JSON, a wrong type, a killed member's
    last line cut short) is read line by line, which keeps the good lines and names the first bad one."""
    import pyarrow.json as pj

    from analysis.rundir.compact import line_count, schema
    if not _ends_a_line(path):  # its last line cut short: the line reader drops it
        return _line_by_line(path, table, run_dir)
    try:
        data = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema(table),
                                                                unexpected_field_behavior="ignore"))
    except Exception:
        return _line_by_line(path, table, run_dir)
    if data.num_rows != line_count(path) or contract.first_problem(table, data) is not None:
        return _line_by_line(path, table, run_dir)
    return data


def checked_lines(path: Path, table: str, run_dir: Path) -> list[dict]:
    """Every line of a JSON-lines file, each checked against the contract's ``table``; a killed process's last line,
    cut short, left out."""
    out, name = [], str(path.relative_to(run_dir))
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.endswith("\n"):  # a killed member's last line, cut short
                break
            where = f"{name}:{number}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not JSON ({exc.msg})") from None
            contract.check_object(table, obj, where)
            out.append(obj)
    return out


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def _line_by_line(path: Path, table: str, run_dir: Path):
    import pyarrow as pa

    from analysis.rundir.compact import schema
    out = checked_lines(path, table, run_dir)
    return pa.Table.from_pylist(out, schema=schema(table))
