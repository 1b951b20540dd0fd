"""Numbers in a page's prose, written from its curve: a figure slot ``<!-- fig: QUERY -->`` ... ``<!-- /fig -->`` is
rewritten from curve.csv each time the page is published, as the curve and compare blocks are, so no finding quotes
a figure by hand (a test reads each published page against its curve.csv: tests/harness/test_published_pages.py).

A query is ``TRIGGER STYLES MEMBERS METRIC [STAT]``:
- TRIGGER, STYLES: a name, names joined by commas, or ``*``; MEMBERS: a size, ``A-B`` (the sizes from A to B), or
  ``*``: the points of the page's own curve they select.
- METRIC: a figure of the curve (outputs.METRICS), a count (``cells``, ``settled``, ``valid``, ``unsettled``,
  ``invalid``, ``strained``), or ``cpu_pressure_pct_median`` (a point's median CPU pressure, quoted as a range).
- STAT: ``value`` (the default; one point: its median, or its values under outputs.FEW), ``range`` (lowest to
  highest over the points, each point's median or values), ``spread`` (lowest to highest of every value of the
  points, their repeats' own ranges included), ``sum`` (a count, summed), ``ratio`` (this curve's median over the
  other curve's, for the same points: the first curve of the page's compare block), or ``theirs`` (as ``range``,
  over the other curve's points).

A latency figure whose points were all saturated reads "saturated"; a figure with no value reads "–"."""
from __future__ import annotations

import re
from pathlib import Path

from harness.scenario import ScenarioError

from .compare import BLOCK as COMPARE, MATCHED, ratio, read_curve, times
from .outputs import FEW, METRICS, shown

SLOT = re.compile(r"(<!-- fig: ([^>]*?) -->)(.*?)(<!-- /fig -->)", re.S)
COUNTED = ("cells", "settled", "valid", "unsettled", "invalid", "strained")
POINTWISE = {"cpu_pressure_pct_median": "{:.0f}"}  # a point's own figure, not its cells': quoted as a range
STATS = ("value", "range", "spread", "sum", "ratio", "theirs")


def fill(page: Path, text: str, curve: list[dict]) -> str:
    """``text`` with every figure slot rewritten from ``curve`` (the page's own curve.csv rows); ScenarioError
    naming the slot when its query is not of the form above or selects nothing."""
    def slot(match: re.Match) -> str:
        return f"{match.group(1)}{answer(match.group(2), curve, lambda: other_curve(page, text))}{match.group(4)}"
    return SLOT.sub(slot, text)


def other_curve(page: Path, text: str) -> list[dict]:
    match = COMPARE.search(text)
    if match is None:
        raise ScenarioError(f"{page}: a figure slot asks for a ratio, and the page has no compare block to name the "
                            "other curve")
    return read_curve(page.parent / match.group(2))


def answer(query: str, curve: list[dict], other=lambda: []) -> str:
    words = query.split()
    if len(words) not in (4, 5):
        raise ScenarioError(f"figure slot '{query}': give TRIGGER STYLES MEMBERS METRIC [STAT]")
    trigger, styles, members, metric = words[:4]
    stat = words[4] if len(words) == 5 else "value"
    if metric not in METRICS and metric not in COUNTED and metric not in POINTWISE:
        raise ScenarioError(f"figure slot '{query}': {metric} is no figure or count of the curve")
    if stat not in STATS:
        raise ScenarioError(f"figure slot '{query}': {stat} is not one of {', '.join(STATS)}")
    points = [p for p in (other() if stat == "theirs" else curve) if chosen(p, trigger, styles, members)]
    if not points or (stat == "value" and len(points) != 1):
        raise ScenarioError(f"figure slot '{query}': selects {len(points)} points of the curve"
                            + ("; 'value' takes one" if points else ""))
    if metric in COUNTED:
        return str(sum(p[metric] for p in points))
    if metric in POINTWISE:
        known = [p[metric] for p in points if p.get(metric) is not None]
        return spread(known, POINTWISE[metric].format) if known else "–"
    if stat == "ratio":
        theirs = {tuple(p[k] for k in MATCHED): p for p in other()}
        found = [r for p in points if (key := tuple(p[k] for k in MATCHED)) in theirs
                 and (r := ratio(theirs[key][f"{metric}_median"], p[f"{metric}_median"])) is not None]
        return spread(found, times) + "×" if found else "–"
    values = [v for p in points for v in (extremes(p, metric) if stat == "spread" else typical(p, metric))]
    if not values:
        return "saturated" if any(p.get(f"{metric}_saturated") for p in points) else "–"
    return spread(values, lambda v: shown(metric, v))


def chosen(point: dict, trigger: str, styles: str, members: str) -> bool:
    if trigger != "*" and point["trigger"] not in trigger.split(","):
        return False
    if styles != "*" and point["style"] not in styles.split(","):
        return False
    if members == "*":
        return True
    low, _, high = members.partition("-")
    return int(low) <= point["members"] <= int(high or low)


def typical(point: dict, metric: str) -> list[float]:
    """A point's figure as prose may quote it: its median from FEW values on, else the values themselves."""
    n = point.get(f"{metric}_n") or 0
    if n >= FEW:
        return [point[f"{metric}_median"]]
    return [] if n == 0 else [point[f"{metric}_min"], point[f"{metric}_max"]][:n]


def extremes(point: dict, metric: str) -> list[float]:
    return [] if not point.get(f"{metric}_n") else [point[f"{metric}_min"], point[f"{metric}_max"]]


def spread(values: list[float], text) -> str:
    low, high = min(values), max(values)
    return text(low) if text(low) == text(high) else f"{text(low)}–{text(high)}"
