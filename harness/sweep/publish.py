"""Publish a sweep's curve into a documentation page: its tables, CSVs and plots copied beside the page, and the
page's curve block (between ``<!-- curve: SOURCE -->`` and ``<!-- /curve -->``) replaced by the sweep's curve.md,
any compare block rewritten from the curves it names (harness/sweep/compare.py), every figure slot of its prose
from the curve (harness/sweep/prose.py), any style-ratios block from the curve (harness/sweep/style_ratios.py), and its reruns block from what each rerun changed (harness/sweep/reruns.py,
also written as reruns.csv). The prose around the blocks is
the author's; only the measured tables are rewritten, so the page never quotes a table by hand. The sweep's record
(sweep.json and cells.jsonl, every run_dir relative to the sweep's folder) is kept beside the page too: a sweep on
another machine starts from it (`kafka-chaos sweep --adopt`)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from harness.scenario import ScenarioError

from . import prose, reruns, style_ratios
from .compare import check, fill, read_curve
from .outputs import took, write_csv
from .spec import SweepSpec
from .store import SweepDir

BLOCK = re.compile(r"(<!-- curve: [^>]*-->\n).*?(<!-- /curve -->)", re.S)
COPIED = ("curve.md", "curve.csv", "cells.csv", "sweep.json")
RECORD = "cells.jsonl"  # written, not copied: every run_dir relative to the sweep's folder


def publish(spec: SweepSpec, source: str, out: Path, page: Path) -> list[Path]:
    """Copy the sweep in ``out`` into ``page``'s folder (docs/x.md → docs/x/) and rewrite the page's curve block.
    Returns the files written. ScenarioError (bad input), nothing written: ``out`` is not this sweep's, it has no
    curve yet, the page has no curve block, a compare block names a curve that is not there, or a figure slot
    (harness/sweep/prose.py) is not of its form or selects nothing."""
    SweepDir(out).same_sweep(spec, source)
    curve = out / "curve.md"
    if not curve.is_file():
        raise ScenarioError(f"--out: {out} holds no curve.md yet (no cell finished)")
    text = page.read_text() if page.is_file() else ""
    if not BLOCK.search(text):
        raise ScenarioError(f"--publish: {page} has no '<!-- curve: ... -->' ... '<!-- /curve -->' block to fill")
    folder = page.with_suffix("")
    check(page, text, {folder / name for name in COPIED})
    table = curve.read_text().strip("\n")
    text = BLOCK.sub(lambda m: f"{m.group(1)}{table}\n{m.group(2)}", text, count=1)
    curve_rows = read_curve(out / "curve.csv")
    text = prose.fill(page, text, curve_rows)  # a bad figure slot: refused before any write
    text = style_ratios.fill(text, curve_rows)
    sweep = SweepDir(out)
    record = sweep.rows()
    changed = reruns.changes(record, sweep.meta().get("reruns", {}))
    text = reruns.fill(text, changed)
    folder.mkdir(exist_ok=True)
    written = []
    for made in [out / name for name in COPIED] + sorted(out.glob("*.png")):
        shutil.copyfile(made, folder / made.name)
        written.append(folder / made.name)
    if changed:
        write_csv(folder / reruns.FILE, changed, tuple(changed[0]))
        written.append(folder / reruns.FILE)
    rows = [{**row, "run_dir": sweep.relative(row["run_dir"]) if row.get("run_dir") else None} for row in record]
    (folder / RECORD).write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
    written.append(folder / RECORD)
    page.write_text(fill(page, text))
    return [page, *written]


def took_line(out: Path) -> str:
    """What the finished cells took, for the page's prose (the sweep's index.html says the same)."""
    return took(list(SweepDir(out).finished().values()))
