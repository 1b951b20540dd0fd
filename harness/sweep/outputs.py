"""What a sweep writes from its rows (written again after every cell, so a sweep cut short still has them):
cells.csv and cells.json (one row a cell), curve.csv (each point of the curve: its usable repeats' figures),
PNG plots, and index.html.

A point's figures come from its usable cells only (status ``ok``: settled and valid, analysis.rebalance_cost.status);
each figure carries n, its values' count. With 3 values or more it is shown as their median [range]; with fewer,
as the values themselves (a median of two is their mean). A latency figure of a cell whose steady state before the
trigger was already slow (its p99 above SATURATED_MS, twice the members' batch wait) measures the machine, not the
trigger: it is counted as saturated and never shown as a number."""
from __future__ import annotations

import csv
import html
import json
import statistics
from pathlib import Path

from analysis.api import FAMILY, FIGURES, ROW_COLUMNS, TABLE, applies
from harness.sweep.plots import draw
from harness.sweep.spec import STYLES
from harness.sweep.store import SweepDir
from harness.sweep.triggers import TRIGGERS
from workloads.config import BATCH_WAIT_MS

POINT = ("client", "partitions_per_member", "style", "trigger", "members")
COUNTS = ("cells", "settled", "valid", "unsettled", "invalid", "failed", "strained",
          "cpu_pressure_pct_median")  # a point's, beside its figures; valid counts the settled and valid (usable) cells
# the figures the curve carries, each declared by the analysis (analysis/figures/cell.py): name -> (what it is, its
# unit, its scale)
METRICS = {f.name: (f.title, f.unit, f.scale) for f in FIGURES}


def sweep_metrics(stateful: bool) -> tuple[str, ...]:
    """The figures a sweep's cells carry: a family's (the state's) only in a sweep of that family."""
    return tuple(m for m in METRICS if m not in FAMILY or (stateful and FAMILY[m] == "state"))
SATURATED_MS = 2 * BATCH_WAIT_MS  # a steady-state p99 above it: the members were already behind before the trigger
BASELINE = {f.name: f.baseline for f in FIGURES if f.baseline}
FEW = 3  # under this many values a figure is shown as its values, not as a median and a range
STYLE_ORDER = {style: i for i, style in enumerate(STYLES)}
PLOTTED = tuple(f.name for f in FIGURES if f.plotted)
TABLED = TABLE
COLUMN_HEADS = {f.name: f.column for f in FIGURES}
CELL_COLUMNS = ("cell", "client", "members", "partitions_per_member", "partitions", "style", "trigger", "repeat",
                "status", *ROW_COLUMNS, "seconds", "finding", "error", "run_dir")


def usable(row: dict) -> bool:
    """A cell whose figures enter the curve: settled and valid (its status by analysis.rebalance_cost.status)."""
    return row["status"] == "ok"


def saturated(row: dict, metric: str) -> bool:
    """The cell's latency figure measures a machine already behind: its baseline's p99 is above SATURATED_MS."""
    baseline = row.get(BASELINE[metric]) if metric in BASELINE else None
    return baseline is not None and baseline > SATURATED_MS


def strained(row: dict) -> bool:
    """The machine, not only the trigger, shaped the cell: its brokers logged a slow controller event in the window or
    the 20 s before it, or more members' sessions expired then than the trigger's own (a crash's member)."""
    expected = TRIGGERS[row["trigger"]].own_expiries if row.get("trigger") in TRIGGERS else 0
    return bool(row.get("broker_stalls")) or (row.get("sessions_expired") or 0) > expected


def curve(rows: list[dict]) -> list[dict]:
    """One point a (client, partitions per member, style, trigger, size): how many cells, settled, valid (settled and
    valid: usable), unsettled, invalid, failed and strained, the median CPU pressure, and for each figure over the
    usable cells: n, the median (from FEW values on), min and max, and for a latency figure how many cells it left
    out as saturated."""
    points: dict[tuple, list[dict]] = {}
    for row in rows:
        points.setdefault(tuple(row[k] for k in POINT), []).append(row)
    out = []
    for key in sorted(points, key=lambda k: (k[0], k[1], STYLE_ORDER.get(k[2], len(STYLE_ORDER)), k[3], k[4])):
        cells = points[key]
        ok = [r for r in cells if usable(r)]
        point = {**dict(zip(POINT, key)), "cells": len(cells),
                 "settled": sum(r["status"] in ("ok", "invalid") for r in cells), "valid": len(ok),
                 **{status: sum(r["status"] == status for r in cells) for status in ("unsettled", "invalid", "failed")},
                 "strained": sum(map(strained, cells))}
        pressure = [r["cpu_pressure_pct"] for r in cells if r.get("cpu_pressure_pct") is not None]
        point["cpu_pressure_pct_median"] = statistics.median(pressure) if pressure else None
        for metric in (m for m in METRICS if applies(m, rows)):
            point |= summarised(metric, [r for r in ok if not saturated(r, metric)])
            if metric in BASELINE:
                point[f"{metric}_saturated"] = sum(saturated(r, metric) for r in ok)
        out.append(point)
    return out


def summarised(metric: str, rows: list[dict]) -> dict:
    """<metric>_n, _median (None under FEW values: shown as the values), _min and _max over the rows that have it."""
    values = [r[metric] for r in rows if r.get(metric) is not None]
    return {f"{metric}_n": len(values),
            f"{metric}_median": statistics.median(values) if len(values) >= FEW else None,
            f"{metric}_min": min(values, default=None), f"{metric}_max": max(values, default=None)}


def write_outputs(folder: SweepDir) -> None:
    rows = sorted(({**r, "run_dir": folder.relative(r["run_dir"]) if r.get("run_dir") else None}
                   for r in folder.finished().values()), key=lambda r: r["cell"])
    points = curve(rows)
    write_csv(folder.path / "cells.csv", rows, tuple(c for c in CELL_COLUMNS if applies(c, rows)))
    (folder.path / "cells.json").write_text(json.dumps({"sweep": folder.meta(), "cells": rows, "curve": points},
                                                       indent=2, default=str) + "\n")
    write_csv(folder.path / "curve.csv", points, tuple(points[0]) if points else POINT)
    (folder.path / "curve.md").write_text(markdown(points))
    images = draw(points, folder.path, {name: METRICS[name] for name in PLOTTED if applies(name, points)})
    (folder.path / "index.html").write_text(page(folder.meta(), rows, points, images))


def figure_text(point: dict, metric: str) -> str:
    """A point's figure as the tables show it, with its n: ``median [min–max] n=N`` from FEW values on, the values
    themselves under that, "saturated" for a latency figure whose every usable cell was, "–" with no value."""
    n, saturated_n = point[f"{metric}_n"], point.get(f"{metric}_saturated") or 0
    low, high = point[f"{metric}_min"], point[f"{metric}_max"]
    if n == 0:
        return "saturated" if saturated_n else "–"
    if n >= FEW:
        spread = "" if low == high else f" [{shown(metric, low)}–{shown(metric, high)}]"
        text = f"{shown(metric, point[f'{metric}_median'])}{spread} n={n}"
    else:
        text = ", ".join(shown(metric, v) for v in ([low] if n == 1 else [low, high])) + f" n={n}"
    return text + (f", {saturated_n} saturated" if saturated_n else "")


def shown(metric: str, value: float) -> str:
    """A figure in its unit: whole milliseconds with thousands separators, anything else to 3 significant digits
    (from 1,000 on as a whole number with separators, never in exponent form)."""
    _, unit, scale = METRICS[metric]
    if unit == "ms":
        return f"{value / scale:,.0f}"
    rounded = float(f"{value / scale:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{value / scale:.3g}"


def markdown(points: list[dict]) -> str:
    """The curve as Markdown tables, one a client, partitions per member and trigger (docs/rebalance-cost.md takes
    them): a row a style and size, each figure as figure_text gives it."""
    out = []
    for key in sorted({(p["client"], p["partitions_per_member"], p["trigger"]) for p in points}):
        client, ppm, trigger = key
        tabled = [m for m in TABLED if applies(m, points)]
        heads = ["style", "members", "settled / valid / cells", *(COLUMN_HEADS[m] for m in tabled), "machine"]
        out += [f"### {client}, {ppm} partitions a member: {trigger}", "", "| " + " | ".join(heads) + " |",
                "|" + "---|" * len(heads)]
        for p in (p for p in points if (p["client"], p["partitions_per_member"], p["trigger"]) == key):
            out.append(f"| {p['style']} | {p['members']} | {p['settled']} / {p['valid']} / {p['cells']} | "
                       + " | ".join(figure_text(p, m) for m in tabled) + f" | {_machine(p)} |")
        out.append("")
    return "\n".join(out)


def _machine(point: dict) -> str:
    """The machine column: the median CPU pressure, and how many cells it strained (see strained)."""
    pressure = point.get("cpu_pressure_pct_median")
    parts = ([f"CPU {pressure:.0f} %"] if pressure is not None else []) + (
        [f"strained {point['strained']} / {point['cells']}"] if point.get("strained") else [])
    return ", ".join(parts) or "–"


def write_csv(path: Path, rows: list[dict], columns) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: _csv_value(v) for k, v in row.items()} for row in rows)


def _csv_value(value):
    """A row's value in a CSV cell: a mapping (the anomaly counts) as "name N; name N"."""
    if isinstance(value, dict):
        return "; ".join(f"{k} {v}" for k, v in value.items())
    return value


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, dict):
        return html.escape(_csv_value(value))
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def page(meta: dict, rows: list[dict], points: list[dict], images: list[str]) -> str:
    spec = meta["spec"]
    settings = ", ".join(f"{k} {v}" for k, v in spec["cell"].items() if v is not None)
    metrics = [m for m in METRICS if applies(m, points)]
    columns = [c for c in CELL_COLUMNS[:-1] if applies(c, rows)]
    head = ("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in POINT + COUNTS)
            + "".join(f"<th>{html.escape(METRICS[m][0])} ({METRICS[m][1]})</th>" for m in metrics) + "</tr>")
    body = "".join("<tr>" + "".join(f"<td>{_cell(p[c])}</td>" for c in POINT + COUNTS)
                   + "".join(f"<td>{html.escape(figure_text(p, m))}</td>" for m in metrics) + "</tr>" for p in points)
    cell_rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns)
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
<em>unsettled</em>, one that settled in a run the analysis found invalid <em>invalid</em>; either is drawn as a cross
at the top of its plot and enters no figure. Each figure is over the settled and valid repeats, with its n: their
median [range] from {FEW} on, the values themselves under that; a latency figure whose steady state before the trigger
was already over {SATURATED_MS} ms at the p99 is <em>saturated</em>, never a number. A cell is
<em>strained</em> when the machine, not only the trigger, shaped it: its brokers logged a slow controller event in
the window or the 20 s before it, or more members' sessions expired then than the trigger's own; <em>cpu_pressure_pct</em> is the share of the
workload's time some task waited for a CPU (the whole machine's).</p>
{pictures}
<h2>The curve</h2><table>{head}{body}</table>
<details><summary>Every cell ({len(rows)})</summary><table><tr>{''.join(f'<th>{c}</th>' for c in [*columns, CELL_COLUMNS[-1]])}</tr>
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
    """The cell's report, relative to the sweep's folder (a row's run_dir is, but for rows written before)."""
    path = Path(run_dir) / "report" / "index.html"
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.relative_to(Path(run_dir).parents[1]))
    except ValueError:
        return str(path)
