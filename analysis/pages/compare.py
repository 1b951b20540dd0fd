"""Compare runs: one row of figures per run, e.g. the assignor matrix (rebalances, stop-the-world time,
duplicates, losses per configuration). Reads each run's report/summary.json (analysing the run first when
it has none) and, for the configuration columns, its scenario.yaml.

A check that did not run has no count: its cell reads "not run" (could not verify), never 0. Both shapes of
summary.json are read: `checks[name]` with `ran` and status ran / unknown / not_run / crashed and a null count,
and the older one with status ran / skipped / crashed and a count of 0 whatever the status."""
from __future__ import annotations

import json
import math
from pathlib import Path

from analysis.checks import REGISTRY
from analysis.errors import InputError

CONFIG_KEYS = ("assignor", "remote_assignor", "protocol", "group_protocol", "commit", "static_membership")
COLUMNS = [
    ("run", "run"), ("config", "configuration"), ("valid", "verdict"), ("produced_records", "acked"),
    ("consumed_rows", "consumed"), ("rebalances", "rebalances"), ("no_owner_s", "no-owner s"),
    ("longest_no_owner_s", "longest no-owner s"), ("duplicate_extra_deliveries", "extra deliveries"),
    *((name, name.replace("_", " ")) for name in REGISTRY),   # one column per check: its exact count
    ("faults", "faults"), ("max_time_to_stable_s", "max time to stable s"),
]
NOT_RUN = "not run"
# top-level figures that only a check's run makes true: without it they are "not run", not the 0 an old summary wrote
FIGURE_CHECK = {"duplicate_extra_deliveries": "duplicate", "duplicated_offsets": "duplicate", "lost_records": "lost"}
FIGURES = ("produced_records", "consumed_rows", "rebalances", *FIGURE_CHECK)
LARGEST = 1e18   # a figure beyond it is not one a run can have (and would overflow the arithmetic)
# a scenario.yaml beyond these is not one the harness wrote (and YAML's aliases can make one endless or self-referring)
DEEPEST, MOST_NODES = 64, 100_000


def read_json(path: Path, what: str) -> dict:
    """A JSON object file (summary.json, run.json); anything else is bad input naming the file."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object ({what}), got {type(data).__name__}")
    return data


def read_summary(path: Path) -> dict:
    """report/summary.json, with every field compare and trend compute with checked for its type."""
    s = read_json(path, "summary.json")
    for key in FIGURES:
        _number(path, key, s.get(key))
    if not isinstance(s.get("valid"), (bool, str, type(None))):
        raise InputError(f"{path}: field valid: expected true, false or a word, got {_shown(s['valid'])}")
    counts = _mapping(path, "anomaly_counts", s.get("anomaly_counts"))
    for name, value in counts.items():
        _number(path, f"anomaly_counts.{name}", value)
    for name, state in _mapping(path, "checks", s.get("checks")).items():
        _mapping(path, f"checks.{name}", state)
    figures = _mapping(path, "rebalance_figures", s.get("rebalance_figures"))
    for key in ("no_owner_total_ms", "no_owner_longest_ms"):
        _number(path, f"rebalance_figures.{key}", figures.get(key))
    for i, fault in enumerate(_list(path, "faults", s.get("faults"))):
        _number(path, f"faults[{i}].time_to_stable_ms", _mapping(path, f"faults[{i}]", fault, nullable=False).get("time_to_stable_ms"))
    started = _list(path, "time_range_ms", s.get("time_range_ms"))
    _number(path, "time_range_ms[0]", started[0] if started else None)
    return s


def _number(path: Path, field: str, value) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > LARGEST:
        raise InputError(f"{path}: field {field}: expected a number or null, got {_shown(value)}")


def _mapping(path: Path, field: str, value, nullable: bool = True) -> dict:
    if value is None and nullable:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{path}: field {field}: expected an object{' or null' if nullable else ''}, got {_shown(value)}")
    return value


def _list(path: Path, field: str, value) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{path}: field {field}: expected a list or null, got {_shown(value)}")
    return value


def _shown(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def check_ran(summary: dict, name: str) -> bool:
    """Whether a check ran (a check that ran but could not decide, status unknown, did): either shape of summary."""
    state = (summary.get("checks") or {}).get(name)
    if not isinstance(state, dict):
        return False
    ran = state.get("ran")
    return ran if isinstance(ran, bool) else state.get("status") in ("ran", "unknown")


def not_run(summary: dict) -> dict[str, str]:
    """check -> why it did not run, for every check of the registry that did not (absent from an old summary too)."""
    why = {}
    for name in REGISTRY:
        if not check_ran(summary, name):
            state = (summary.get("checks") or {}).get(name) or {}
            why[name] = str(state.get("reason") or state.get("error") or state.get("status") or "not in the summary")
    return why


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


def read_scenario(run_dir: Path) -> dict:
    """The run's scenario.yaml as a mapping ({} when the run has none: a run written by another tool)."""
    import yaml
    path = run_dir / "scenario.yaml"
    if not path.exists():
        return {}
    try:
        data = yaml.load(path.read_bytes().decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except (yaml.YAMLError, ValueError) as exc:   # ValueError: an integer of more digits than Python converts
        raise InputError(f"{path}: not valid YAML ({' '.join(str(exc).split())[:160]})") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping (a scenario), got {type(data).__name__}")
    _bounded(path, data)
    return data


def _bounded(path: Path, data) -> None:
    stack, nodes = [(data, 0)], 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > DEEPEST or nodes > MOST_NODES:
            raise InputError(f"{path}: nested deeper than {DEEPEST} levels, larger than {MOST_NODES:,} values, "
                             "or referring to itself")
        if isinstance(value, dict):
            stack += [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            stack += [(v, depth + 1) for v in value]


def scenario_config(scenario: dict) -> dict:
    return {k: v for k in CONFIG_KEYS if (v := _find(scenario, k)) is not None}


def row_for(run_dir: Path, s: dict, scenario: dict | None = None) -> dict:
    """One run's figures; a check that did not run (and the figures only it makes) is None, listed in `not_run`.
    `scenario`: the run's scenario.yaml when the caller has read it already."""
    cfg = scenario_config(read_scenario(run_dir) if scenario is None else scenario)
    rf = s.get("rebalance_figures") or {}
    counts = s.get("anomaly_counts") or {}
    skipped = not_run(s)
    stable = [f.get("time_to_stable_ms") for f in s.get("faults") or [] if f.get("time_to_stable_ms") is not None]
    ms = lambda v: None if v is None else round(v / 1000, 2)  # noqa: E731
    figure = lambda key: None if FIGURE_CHECK.get(key) in skipped else s.get(key)  # noqa: E731
    return {
        "run": run_dir.name, "run_dir": str(run_dir),
        "config": " ".join(f"{k}={v}" for k, v in cfg.items()) or "–", "config_values": cfg,
        "valid": s.get("valid"), "produced_records": s.get("produced_records"), "consumed_rows": s.get("consumed_rows"),
        "rebalances": s.get("rebalances"), "no_owner_s": ms(rf.get("no_owner_total_ms")),
        "longest_no_owner_s": ms(rf.get("no_owner_longest_ms")),
        "duplicate_extra_deliveries": figure("duplicate_extra_deliveries"),
        "duplicated_offsets": figure("duplicated_offsets"), "lost_records": figure("lost_records"),
        **{name: None if name in skipped else counts.get(name) for name in REGISTRY},
        "faults": len(s.get("faults") or []), "max_time_to_stable_s": ms(max(stable)) if stable else None,
        "not_run": skipped,
    }


def not_run_keys(row: dict) -> set[str]:
    """The row's columns that read "not run": its checks that did not run and the figures only they make."""
    skipped = row.get("not_run") or {}
    return set(skipped) | {key for key, check in FIGURE_CHECK.items() if check in skipped}


def write_table(out: Path, table: dict) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(table, indent=2, default=str) + "\n")
        (out / "compare.md").write_text(render_markdown(table))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__})") from None


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
        skipped = not_run_keys(r)
        lines.append("| " + " | ".join(NOT_RUN if c["key"] in skipped else cell(r.get(c["key"])) for c in cols) + " |")
    return "\n".join(lines) + "\n"
