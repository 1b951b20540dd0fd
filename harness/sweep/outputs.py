"""What a sweep writes from its rows (written again after every cell, so a sweep cut short still has them):
cells.csv and cells.json (one row a cell), curve.csv (each point of the curve: the median of its repeats, with its
range), PNG plots, and index.html."""
from __future__ import annotations

import csv
import html
import json
import statistics
from pathlib import Path

from harness.sweep.plots import draw
from harness.sweep.spec import STYLES
from harness.sweep.store import SweepDir

POINT = ("client", "partitions_per_member", "style", "trigger", "members")
COUNTS = ("cells", "settled", "unsettled", "failed", "strained", "cpu_pressure_pct_median")  # a point's, beside its figures
# the figures the curve carries, with the unit each is shown in
METRICS = {
    "time_to_stable_ms": ("time from trigger to stable", "s", 1000),
    "unserved_longest_ms": ("longest time a partition had no live owner", "s", 1000),
    "unserved_partition_s": ("partition-seconds without a live owner", "partition-s", 1),
    "latency_rise_p99_ms": ("rise of p99 end-to-end latency in the window", "s", 1000),
    "revoked": ("partitions revoked", "partitions", 1),
    "moved": ("partitions moved", "partitions", 1),
    "needed": ("partitions that had to move", "partitions", 1),
    "join_phase_ms": ("the coordinator's JoinGroup phases (classic)", "ms", 1),
    "assignment_ms": ("computing the assignment: the classic leader's, or the KIP-848 coordinator's", "ms", 1),
}
# what the machine was like while a cell was measured (its window and the 20 s before it): members whose session
# expired (a crash's own member is one), the brokers' slow controller events (analysis/broker_logs.py); and the
# machine's CPU pressure over the workload
MACHINE = ("sessions_expired", "broker_stalls", "broker_stall_max_ms", "cpu_pressure_pct")
STYLE_ORDER = {style: i for i, style in enumerate(STYLES)}
PLOTTED = ("time_to_stable_ms", "unserved_longest_ms", "unserved_partition_s", "latency_rise_p99_ms")
CELL_COLUMNS = ("cell", "client", "members", "partitions_per_member", "partitions", "style", "trigger", "repeat",
                "status", "valid", "lost", "duplicates", "time_to_stable_ms", "first_change_ms", "rebalances", "unserved_longest_ms",
                "unserved_partition_s", "unserved_partitions", "revoked", "moved", "needed", "latency_steady_p99_ms",
                "latency_window_p99_ms", "latency_window_max_ms", "latency_rise_p99_ms", "coordinator_rounds", "join_phase_ms",
                "assignment_ms", *MACHINE, "seconds", "finding",
                "error", "run_dir")


def strained(row: dict) -> bool:
    """The machine, not only the trigger, shaped the cell: its brokers logged a slow controller event in the window or
    the 20 s before it, or more members' sessions expired then than the trigger's own (a crash's member)."""
    expected = 1 if row.get("trigger") == "crash" else 0
    return bool(row.get("broker_stalls")) or (row.get("sessions_expired") or 0) > expected


def curve(rows: list[dict]) -> list[dict]:
    """One point a (client, partitions per member, style, trigger, size): cells, how many settled, how many the
    machine strained, the median CPU pressure, and for each figure the median, min and max over the settled
    repeats."""
    points: dict[tuple, list[dict]] = {}
    for row in rows:
        points.setdefault(tuple(row[k] for k in POINT), []).append(row)
    out = []
    for key in sorted(points, key=lambda k: (k[0], k[1], STYLE_ORDER.get(k[2], len(STYLE_ORDER)), k[3], k[4])):
        cells = points[key]
        ok = [r for r in cells if r["status"] == "ok"]
        point = {**dict(zip(POINT, key)), "cells": len(cells), "settled": len(ok),
                 "unsettled": sum(r["status"] == "unsettled" for r in cells),
                 "failed": sum(r["status"] == "failed" for r in cells), "strained": sum(map(strained, cells))}
        pressure = [r["cpu_pressure_pct"] for r in cells if r.get("cpu_pressure_pct") is not None]
        point["cpu_pressure_pct_median"] = statistics.median(pressure) if pressure else None
        for metric in METRICS:
            values = [r[metric] for r in ok if r.get(metric) is not None]
            point[f"{metric}_median"] = statistics.median(values) if values else None
            point[f"{metric}_min"] = min(values, default=None)
            point[f"{metric}_max"] = max(values, default=None)
        out.append(point)
    return out


def write_outputs(folder: SweepDir) -> None:
    rows = sorted(folder.finished().values(), key=lambda r: r["cell"])
    points = curve(rows)
    _csv(folder.path / "cells.csv", rows, CELL_COLUMNS)
    (folder.path / "cells.json").write_text(json.dumps({"sweep": folder.meta(), "cells": rows, "curve": points},
                                                       indent=2, default=str) + "\n")
    _csv(folder.path / "curve.csv", points, tuple(points[0]) if points else POINT)
    (folder.path / "curve.md").write_text(markdown(points))
    images = draw(points, folder.path, {name: METRICS[name] for name in PLOTTED})
    (folder.path / "index.html").write_text(page(folder.meta(), rows, points, images))


def _range(point: dict, metric: str) -> str:
    """median [min-max] of a figure, in its unit; "–" when no repeat settled."""
    median = point[f"{metric}_median"]
    if median is None:
        return "–"
    low, high = point[f"{metric}_min"], point[f"{metric}_max"]
    spread = "" if low == high else f" [{shown(metric, low)}–{shown(metric, high)}]"
    return f"{shown(metric, median)}{spread}"


def shown(metric: str, value: float) -> str:
    """A figure in its unit: whole milliseconds with thousands separators, anything else to 3 significant digits."""
    _, unit, scale = METRICS[metric]
    return f"{value / scale:,.0f}" if unit == "ms" else f"{value / scale:.3g}"


def markdown(points: list[dict]) -> str:
    """The curve as Markdown tables, one a client, partitions per member and trigger (docs/rebalance-cost.md takes
    them): a row a style and size, each figure the median of the settled repeats [their range]."""
    out = []
    for key in sorted({(p["client"], p["partitions_per_member"], p["trigger"]) for p in points}):
        client, ppm, trigger = key
        out += [f"### {client}, {ppm} partitions a member: {trigger}", "",
                "| style | members | settled / cells | time to stable (s) | longest unserved (s) | unserved "
                "(partition-s) | revoked | moved | had to move | p99 latency rise (s) | JoinGroup phase (ms) | assignment "
                "(ms) | machine |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for p in (p for p in points if (p["client"], p["partitions_per_member"], p["trigger"]) == key):
            out.append(f"| {p['style']} | {p['members']} | {p['settled']} / {p['cells']} | "
                       + " | ".join(_range(p, m) for m in ("time_to_stable_ms", "unserved_longest_ms",
                                                            "unserved_partition_s", "revoked", "moved", "needed",
                                                            "latency_rise_p99_ms", "join_phase_ms", "assignment_ms"))
                       + f" | {_machine(p)} |")
        out.append("")
    return "\n".join(out)


def _machine(point: dict) -> str:
    """The machine column: the median CPU pressure, and how many cells it strained (see strained)."""
    pressure = point.get("cpu_pressure_pct_median")
    parts = ([f"CPU {pressure:.0f} %"] if pressure is not None else []) + (
        [f"strained {point['strained']} / {point['cells']}"] if point.get("strained") else [])
    return ", ".join(parts) or "–"


def _csv(path: Path, rows: list[dict], columns) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def page(meta: dict, rows: list[dict], points: list[dict], images: list[str]) -> str:
    spec = meta["spec"]
    settings = ", ".join(f"{k} {v}" for k, v in spec["cell"].items() if v is not None)
    head = ("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in POINT + COUNTS)
            + "".join(f"<th>{html.escape(METRICS[m][0])} (median)</th>" for m in METRICS) + "</tr>")
    body = "".join("<tr>" + "".join(f"<td>{_cell(p[c])}</td>" for c in POINT + COUNTS)
                   + "".join(f"<td>{_cell(p[f'{m}_median'])}</td>" for m in METRICS) + "</tr>" for p in points)
    cell_rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in CELL_COLUMNS[:-1])
        + (f"<td><a href=\"{html.escape(_report(r['run_dir']))}\">report</a></td>" if r.get("run_dir") else "<td>–</td>")
        + "</tr>" for r in rows)
    pictures = "".join(f'<figure><img src="{html.escape(name)}" alt="{html.escape(name)}"></figure>' for name in images)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sweep {html.escape(meta['name'])}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} img{{max-width:100%}}
details{{margin-top:1em}}</style></head><body>
<h1>The cost of a rebalance: sweep {html.escape(meta['name'])}</h1>
<p>Started {html.escape(meta['started'])} from {html.escape(meta['source'])}. {len(rows)} cells finished, in
{took(rows)}.
Every cell: {html.escape(settings)}. A cell whose group did not settle within its window or limit is counted
<em>unsettled</em> and drawn as a cross at the top of its plot; medians are over the settled repeats. A cell is
<em>strained</em> when the machine, not only the trigger, shaped it: its brokers logged a slow controller event in
the window or the 20 s before it, or more members' sessions expired then than the trigger's own; <em>cpu_pressure_pct</em> is the share of the
workload's time some task waited for a CPU (the whole machine's).</p>
{pictures}
<h2>The curve</h2><table>{head}{body}</table>
<details><summary>Every cell ({len(rows)})</summary><table><tr>{''.join(f'<th>{c}</th>' for c in CELL_COLUMNS)}</tr>
{cell_rows}</table></details>
</body></html>
"""


def took(rows: list[dict]) -> str:
    """The cells' own time (each cell's run, analysis and measure): what the sweep took, its pauses left out."""
    seconds = sum(r.get("seconds") or 0 for r in rows)
    by_size: dict[int, float] = {}
    for r in rows:
        by_size[r["members"]] = by_size.get(r["members"], 0) + (r.get("seconds") or 0)
    sizes = ", ".join(f"{m} members {s / 60:.1f} min" for m, s in sorted(by_size.items()))
    return f"{seconds / 60:.1f} min of cells" + (f" ({sizes})" if sizes else "")


def _report(run_dir: str) -> str:
    """The cell's report, relative to the sweep's folder when it is inside it."""
    path = Path(run_dir) / "report" / "index.html"
    try:
        return str(path.relative_to(Path(run_dir).parents[1]))
    except ValueError:
        return str(path)
