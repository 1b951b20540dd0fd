"""What a rerun changed (`kafka-chaos sweep --rerun PATTERN`): the cells it measured again keep their earlier rows in
cells.jsonl, and sweep.json keeps when the rerun began. For each point a rerun touched, each figure over the earlier
rows and over the new ones, by the curve's own rule (outputs.curve: usable cells, n, median from FEW values on), and
the change of its median. --publish writes them as reruns.csv beside the page, and rewrites the page's
``<!-- reruns -->`` ... ``<!-- /reruns -->`` block from them, so a page says which figures a rerun moved, and by how
much, from its data."""
from __future__ import annotations

import fnmatch
import re

from .compare import HEADS
from .outputs import POINT, STYLE_ORDER, curve, figure_text, shown
from .store import RETRIED, measured_before

FILE = "reruns.csv"
BLOCK = re.compile(r"(<!-- reruns -->\n).*?(<!-- /reruns -->)", re.S)
COMPARED = tuple(HEADS)  # the compare block's figures: before, after and the change
NEW_ONLY = {"stop_delay_ms": "stop delay (ms)"}  # what a rerun measures that its earlier rows may lack: after only
FIGURES = COMPARED + tuple(NEW_ONLY)
SIDES = ("before", "after")
SUMMARY = ("n", "median", "min", "max", "saturated")  # a figure's summary in a curve point (outputs.curve)


def measured_again(rows: list[dict], pattern: str, since: str) -> tuple[list[dict], list[dict]]:
    """The rows of the cells a rerun of ``pattern`` (begun at ``since``) measured again: each such cell's last row
    from before it and its last row from it, in the order cells.jsonl holds them. A cell the rerun has not reached
    is in neither."""
    before: dict[str, dict] = {}
    after: dict[str, dict] = {}
    for row in rows:
        if fnmatch.fnmatchcase(row["cell"], pattern):
            (before if measured_before(row, since) else after)[row["cell"]] = row
    again = [cell for cell in before if cell in after and after[cell]["status"] not in RETRIED]
    return [before[cell] for cell in again], [after[cell] for cell in again]


def changes(rows: list[dict], reruns: dict[str, str]) -> list[dict]:
    """One row a (rerun, point): the rerun's pattern and start, the point, its valid cells before and after, and for
    each figure in FIGURES its summary (outputs.summarised) before and after, and the change of its median (after
    less before; None unless both sides have one)."""
    out = []
    for pattern, since in reruns.items():
        old, new = (curve(cells) for cells in measured_again(rows, pattern, since))
        new_by_point = {tuple(p[k] for k in POINT): p for p in new}
        for before in old:
            after = new_by_point.get(tuple(before[k] for k in POINT))
            if after is None:
                continue
            row = {"rerun": pattern, "since": since, **{k: before[k] for k in POINT},
                   "valid_before": before["valid"], "valid_after": after["valid"], "cells": after["cells"]}
            for metric in FIGURES:
                for side, point in zip(SIDES, (before, after)):
                    row |= {f"{metric}_{side}_{stat}": point.get(f"{metric}_{stat}") for stat in SUMMARY}
                medians = before[f"{metric}_median"], after[f"{metric}_median"]
                row[f"{metric}_change"] = None if None in medians else medians[1] - medians[0]
            out.append(row)
    return sorted(out, key=lambda r: (r["rerun"], r["client"], r["partitions_per_member"], r["trigger"],
                                      STYLE_ORDER.get(r["style"], len(STYLE_ORDER)), r["members"]))


def side(row: dict, metric: str, which: str) -> str:
    """One side of a figure as the tables show it (outputs.figure_text)."""
    point = {f"{metric}_{stat}": row.get(f"{metric}_{which}_{stat}") for stat in SUMMARY}
    point[f"{metric}_n"] = point[f"{metric}_n"] or 0  # a figure its earlier rows did not have
    return figure_text(point, metric)


def change_text(row: dict, metric: str) -> str:
    change = row[f"{metric}_change"]
    if change is None:
        return "–"
    return ("+" if change > 0 else "−" if change < 0 else "±") + shown(metric, abs(change))


def markdown(rows: list[dict]) -> str:
    """A table a rerun: a row a point it measured again, each figure before → after (Δ, the change of the median)."""
    if not rows:
        return "(no cell measured again)"
    out = []
    for pattern in dict.fromkeys(r["rerun"] for r in rows):
        mine = [r for r in rows if r["rerun"] == pattern]
        head = ["client", "trigger", "style", "members", "valid before → after"]
        for metric in COMPARED:
            head += [f"{HEADS[metric]}: before", "after", "Δ"]
        head += NEW_ONLY.values()
        out += [f"Rerun `{pattern}`, begun {mine[0]['since']}: each figure over the settled and valid repeats before "
                "the rerun and over the rerun's own, with n; Δ is the change of the median (from 3 values on).", "",
                "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in mine:
            cells = [r["client"], r["trigger"], r["style"], str(r["members"]), f"{r['valid_before']} → {r['valid_after']}"]
            for metric in COMPARED:
                cells += [side(r, metric, "before"), side(r, metric, "after"), change_text(r, metric)]
            cells += [side(r, metric, "after") for metric in NEW_ONLY]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).strip("\n")


def fill(text: str, rows: list[dict]) -> str:
    """``text`` (a page's) with its reruns block, if it has one, rewritten from ``rows`` (changes)."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{markdown(rows)}\n{m.group(2)}", text)
