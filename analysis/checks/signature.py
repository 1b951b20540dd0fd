"""Does a run directory show a bug's signature? A signature is a list of predicates, each over the rows of the
run's own history: ``report/anomalies.jsonl`` (every anomaly the analysis found, uncapped), ``events/*.jsonl``
(what the members logged) or ``transactions/*.jsonl`` (what their transactional producers did, one row an
operation: ``{"transaction": "send_offsets", "where": {"retries": 0, "elapsed_ms": {"gt": 60000}}}``). A run shows the
signature when every predicate matches at least one row.

The predicates arrive as plain dicts with every threshold already a number (the zoo resolves them from the
scenario's settings, harness/zoo/spec.py)::

    {"anomaly": "stall", "where": {"waiting_for": "assignment", "stalled_ms": {"ge": 15000}}}
    {"event": "lost", "where": {}, "after": {"event": "commit_failed", "where": {"detail": {"startswith": "ILLEGAL"}},
                                            "within_ms": 1000}, "never_after": ["assigned"]}

``where`` maps a field (dotted for nested objects) to a value (equality) or to one operator: ``in``, ``gt``, ``ge``,
``lt``, ``le``, ``contains``, ``startswith``, ``present``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import json

from analysis.errors import InputError
from pathlib import Path

OPERATORS = ("in", "gt", "ge", "lt", "le", "contains", "startswith", "present")
MISSING = object()


@dataclass
class Match:
    """What one run showed of a signature: rows matched per predicate, an example of each, and the anomaly
    types the signature does not explain ("other")."""
    shown: bool
    hits: list[int]
    examples: list[dict | None]
    other: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {"shown": self.shown, "hits": self.hits, "examples": self.examples, "other": dict(self.other)}


def field_value(row: dict, name: str):
    value = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def holds(value, condition) -> bool:
    """One field condition: a plain value is equality, a one-key dict an operator."""
    if not (isinstance(condition, dict) and len(condition) == 1 and next(iter(condition)) in OPERATORS):
        return value is not MISSING and value == condition
    (op, arg), = condition.items()
    if op == "present":
        return (value is not MISSING and value is not None) == bool(arg)
    if value is MISSING or value is None:
        return False
    if op == "in":
        return value in arg
    if op in ("contains", "startswith"):
        text = value if isinstance(value, str) else json.dumps(value)
        return arg in text if op == "contains" else text.startswith(arg)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return {"gt": value > arg, "ge": value >= arg, "lt": value < arg, "le": value <= arg}[op]


def matches(row: dict, where: dict) -> bool:
    return all(holds(field_value(row, name), cond) for name, cond in where.items())


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from None
            if isinstance(row, dict):
                rows.append(row)
    return rows


def load_rows(run_dir: Path) -> tuple[list[dict], list[dict]]:
    """(anomaly rows, event rows sorted by time) of an analysed run directory."""
    anomalies = Path(run_dir) / "report" / "anomalies.jsonl"
    if not anomalies.is_file():
        raise InputError(f"{anomalies}: missing; analyse the run first (kafka-chaos analyze {run_dir})")
    events = [row for path in sorted((Path(run_dir) / "events").glob("*.jsonl")) for row in read_jsonl(path)]
    events = [e for e in events if isinstance(e.get("ts_ms"), (int, float)) and isinstance(e.get("member"), str)]
    return read_jsonl(anomalies), sorted(events, key=lambda e: e["ts_ms"])


def transaction_rows(run_dir: Path) -> list[dict]:
    """Every operation the members' transactional producers logged (none: a run without transactions/)."""
    return [row for path in sorted((Path(run_dir) / "transactions").glob("*.jsonl")) for row in read_jsonl(path)]


def _event_rows(pred: dict, events: list[dict]) -> list[dict]:
    by_member: dict[str, list[dict]] = {}
    for e in events:
        by_member.setdefault(e["member"], []).append(e)
    out = []
    for e in events:
        if e.get("kind") != pred["event"] or not matches(e, pred.get("where") or {}):
            continue
        own = by_member[e["member"]]
        after = pred.get("after")
        if after and not any(p.get("kind") == after["event"] and 0 <= e["ts_ms"] - p["ts_ms"] <= after["within_ms"]
                             and p is not e and matches(p, after.get("where") or {}) for p in own):
            continue
        never = set(pred.get("never_after") or ())
        if never and any(later.get("kind") in never and later["ts_ms"] > e["ts_ms"] for later in own):
            continue
        out.append(e)
    return out


def find(run_dir: Path, predicates: list[dict]) -> Match:
    """Evaluate the signature over every anomaly row and event of the run."""
    anomalies, events = load_rows(run_dir)
    operations = transaction_rows(run_dir) if any("transaction" in p for p in predicates) else []
    hits, examples, explained = [], [], set()
    for pred in predicates:
        if "anomaly" in pred:
            rows = [a for a in anomalies if a.get("type") == pred["anomaly"] and matches(a, pred.get("where") or {})]
            explained.update(id(a) for a in rows)
        elif "transaction" in pred:
            rows = [r for r in operations if r.get("op") == pred["transaction"] and matches(r, pred.get("where") or {})]
        else:
            rows = _event_rows(pred, events)
        hits.append(len(rows))
        examples.append(rows[0] if rows else None)
    shown = all(hits)
    other = Counter(a.get("type") for a in anomalies if not (shown and id(a) in explained))
    return Match(shown, hits, examples, other)
