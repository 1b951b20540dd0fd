"""Compare runs: one row of figures per run, e.g. the assignor matrix (rebalances, stop-the-world time,
duplicates, losses per configuration). Reads each run's report/summary.json (analysing the run first when
it has none) and, for the configuration columns, its scenario.yaml."""
from __future__ import annotations

import json
from pathlib import Path

from .checks import REGISTRY
from .errors import InputError

CONFIG_KEYS = ("assignor", "remote_assignor", "protocol", "group_protocol", "commit", "static_membership")
COLUMNS = [
    ("run", "run"), ("config", "configuration"), ("valid", "verdict"), ("produced_records", "acked"),
    ("consumed_rows", "consumed"), ("rebalances", "rebalances"), ("no_owner_s", "no-owner s"),
    ("longest_no_owner_s", "longest no-owner s"), ("duplicate_extra_deliveries", "extra deliveries"),
    *((name, name.replace("_", " ")) for name in REGISTRY),   # one column per check: its exact count
    ("faults", "faults"), ("max_time_to_stable_s", "max time to stable s"),
]


def _find(obj, key):
    if isinstance(obj, dict):
        if key in obj and not isinstance(obj[key], (dict, list)):
            return obj[key]
        for v in obj.values():
            found = _find(v, key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find(v, key)
            if found is not None:
                return found
    return None


def scenario_config(run_dir: Path) -> dict:
    path = run_dir / "scenario.yaml"
    if not path.is_file():
        return {}
    try:
        import yaml
        data = yaml.safe_load(path.read_text()) or {}
    except Exception:
        return {}
    return {k: v for k in CONFIG_KEYS if (v := _find(data, k)) is not None}


def row_for(run_dir: Path, s: dict) -> dict:
    cfg = scenario_config(run_dir)
    rf = s.get("rebalance_figures") or {}
    counts = s.get("anomaly_counts") or {}
    stable = [f.get("time_to_stable_ms") for f in s.get("faults") or [] if f.get("time_to_stable_ms") is not None]
    ms = lambda v: None if v is None else round(v / 1000, 2)  # noqa: E731
    return {
        "run": run_dir.name, "run_dir": str(run_dir),
        "config": " ".join(f"{k}={v}" for k, v in cfg.items()) or "–", "config_values": cfg,
        "valid": s.get("valid"), "produced_records": s.get("produced_records"), "consumed_rows": s.get("consumed_rows"),
        "rebalances": s.get("rebalances"), "no_owner_s": ms(rf.get("no_owner_total_ms")),
        "longest_no_owner_s": ms(rf.get("no_owner_longest_ms")),
        "duplicate_extra_deliveries": s.get("duplicate_extra_deliveries"),
        "duplicated_offsets": s.get("duplicated_offsets"), "lost_records": s.get("lost_records"),
        **{name: counts.get(name) for name in REGISTRY},
        "faults": len(s.get("faults") or []), "max_time_to_stable_s": ms(max(stable)) if stable else None,
    }


def compare(run_dirs, *, spark=None, master=None, remote=None, grace_ms=30_000, reanalyze=False, progress=None) -> dict:
    rows = []
    for rd in run_dirs:
        rd = Path(rd).resolve()
        if not rd.is_dir():
            raise InputError(f"{rd}: run directory does not exist")
        path = rd / "report" / "summary.json"
        if reanalyze or not path.is_file():
            from .api import analyze
            if progress:
                progress("analysing", str(rd))
            summary = analyze(rd, spark=spark, master=master, remote=remote, grace_ms=grace_ms)
        else:
            try:
                summary = json.loads(path.read_text())
            except ValueError as exc:
                raise InputError(f"{rd.name}/report/summary.json: not valid JSON ({exc})") from exc
        rows.append(row_for(rd, summary))
    return {"columns": [{"key": k, "title": t} for k, t in COLUMNS], "runs": rows}


def render_markdown(table: dict) -> str:
    cols = table["columns"]

    def cell(v):
        if v is True:
            return "valid"
        if v is False:
            return "INVALID"
        if v is None:
            return "–"
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(c["title"] for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in table["runs"]:
        lines.append("| " + " | ".join(cell(r.get(c["key"])) for c in cols) + " |")
    return "\n".join(lines) + "\n"
