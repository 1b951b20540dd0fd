"""`kafka-chaos trend RUNS...`: one HTML page of each scenario's verdict, duplicates, losses and time to
stable across nightly runs, so that a regression shows as a break in a line.

RUNS are run directories, or folders holding them (a night's output): every `report/summary.json` under
them is read, with the scenario's name from its `scenario.yaml`; the figures are those of `compare`.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import yaml

from .compare import row_for
from .errors import InputError

SERIES = (("duplicate_extra_deliveries", "re-deliveries"), ("lost_records", "lost records"),
          ("max_time_to_stable_s", "time to stable, s"))
VERDICT_COLOR = {True: "#59a14f", False: "#e15759", None: "#9e9e9e"}


def collect(paths) -> dict[str, list[dict]]:
    """scenario name -> its runs' figures, oldest first."""
    found: dict[str, list[dict]] = {}
    for path in paths:
        path = Path(path).resolve()
        if not path.exists():
            raise InputError(f"{path}: does not exist")
        summaries = [path / "report" / "summary.json"] if (path / "report" / "summary.json").is_file() else \
            sorted(path.rglob("report/summary.json"))
        for summary_path in summaries:
            run_dir = summary_path.parents[1]
            try:
                summary = json.loads(summary_path.read_text())
            except ValueError as exc:
                raise InputError(f"{summary_path}: not valid JSON ({exc})") from None
            name = _scenario_name(run_dir)
            row = row_for(run_dir, summary)
            row["started_ms"] = (summary.get("time_range_ms") or [None])[0] or int(summary_path.stat().st_mtime * 1000)
            found.setdefault(name, []).append(row)
    if not found:
        raise InputError(f"no run with a report/summary.json under {', '.join(str(p) for p in paths)}")
    return {name: sorted(rows, key=lambda r: r["started_ms"]) for name, rows in sorted(found.items())}


def _scenario_name(run_dir: Path) -> str:
    try:
        return (yaml.safe_load((run_dir / "scenario.yaml").read_text()) or {}).get("name") or run_dir.name
    except (OSError, yaml.YAMLError):
        return run_dir.name


def render(trend: dict[str, list[dict]]) -> str:
    sections = "".join(_section(name, rows) for name, rows in trend.items())
    return ("<!doctype html><meta charset=utf-8><title>kafka-chaos trend</title><style>"
            "body{font:14px system-ui,sans-serif;margin:24px;color:#222}h2{margin-top:28px}"
            "svg{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin-right:8px}"
            "svg text{font:11px system-ui,sans-serif;fill:#333}table{border-collapse:collapse;margin:8px 0}"
            "td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}</style>"
            f"<h1>kafka-chaos trend</h1><p>{len(trend)} scenario(s), {sum(len(r) for r in trend.values())} run(s). "
            "Each point is one run, oldest left; its colour is the run's verdict (green valid, red invalid, "
            f"grey undecided).</p><div id=trend>{sections}</div>")


def _section(name: str, rows: list[dict]) -> str:
    verdicts = "".join(f"<td class='verdict {_word(r['valid'])}' style='background:{_color(r['valid'])}' "
                       f"title='{html.escape(r['run'])}'>{_word(r['valid'])}</td>" for r in rows)
    charts = "".join(_chart(rows, key, title) for key, title in SERIES)
    return (f"<section class=scenario data-scenario='{html.escape(name)}'><h2>{html.escape(name)}</h2>"
            f"<table><tr><th>verdict</th>{verdicts}</tr></table>{charts}</section>")


def _chart(rows: list[dict], key: str, title: str, width: int = 300, height: int = 110) -> str:
    left, top, inner_w, inner_h = 40, 18, width - 50, height - 36
    values = [r.get(key) for r in rows]
    top_value = max([v for v in values if v is not None] + [1])
    x = lambda i: left + (inner_w * i / max(1, len(rows) - 1) if len(rows) > 1 else inner_w / 2)  # noqa: E731
    y = lambda v: top + inner_h - inner_h * v / top_value  # noqa: E731
    points = [(x(i), y(v)) for i, v in enumerate(values) if v is not None]
    line = f"<polyline class=trend-line fill=none stroke='#4e79a7' stroke-width=1.5 points='{' '.join(f'{a:.1f},{b:.1f}' for a, b in points)}'/>"
    dots = "".join(f"<circle class=point cx={x(i):.1f} cy={y(v):.1f} r=3.5 fill='{_color(r['valid'])}'>"
                   f"<title>{html.escape(r['run'])}: {v}</title></circle>"
                   for i, (r, v) in enumerate(zip(rows, values)) if v is not None)
    return (f"<svg class='chart {key}' width={width} height={height} role=img aria-label='{html.escape(title)}'>"
            f"<text x={left} y=12>{html.escape(title)}</text><text x=4 y={top + 8}>{top_value:g}</text>"
            f"<text x=4 y={top + inner_h}>0</text><line x1={left} y1={top + inner_h} x2={left + inner_w} y2={top + inner_h} "
            f"stroke='#bbb'/>{line}{dots}</svg>")


def _color(valid) -> str:
    return VERDICT_COLOR.get(valid if isinstance(valid, bool) else None)


def _word(valid) -> str:
    return {True: "valid", False: "invalid"}.get(valid, "undecided") if isinstance(valid, bool) or valid is None else "undecided"


def write(paths, out: Path) -> Path:
    trend = collect(paths)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(trend))
    return out
