"""One style's figures over each other style's, inside one curve: a page's ``<!-- style-ratios: STYLE -->`` ...
``<!-- /style-ratios -->`` block is rewritten from the page's curve.csv each time it is published (as its compare
block and figure slots are), so "eager rebuilds N times what cooperative does" is read from the data, per trigger and
size. A stateful curve is compared on its state figures, any other on the compare block's (harness/sweep/compare.py).
A ratio needs a median on both sides (outputs.FEW values or more); otherwise "–"."""
from __future__ import annotations

import re

from .compare import HEADS, RATIOS, STATE_HEADS, ratio, stateful, times
from .outputs import STYLE_ORDER

BLOCK = re.compile(r"(<!-- style-ratios: (\S+) -->\n).*?(<!-- /style-ratios -->)", re.S)
GROUP = ("client", "partitions_per_member", "trigger", "members")  # a style's point is compared inside its group


def figures(curve: list[dict]) -> tuple[str, ...]:
    return tuple(STATE_HEADS) if stateful(curve) else RATIOS


def table(curve: list[dict], base: str) -> str:
    """Markdown: a row a (trigger, size, other style) where the curve holds ``base`` too; each figure as base's
    median over the other style's."""
    shown = figures(curve)
    by_group = {tuple(p[k] for k in GROUP): p for p in curve if p["style"] == base}
    rows = sorted((p for p in curve if p["style"] != base and tuple(p[k] for k in GROUP) in by_group),
                  key=lambda p: (p["client"], p["partitions_per_member"], p["trigger"], p["members"],
                                 STYLE_ORDER.get(p["style"], len(STYLE_ORDER))))
    if not rows:
        return f"(no point of another style beside {base})"
    heads = {**HEADS, **STATE_HEADS}
    out = [f"{base}'s median over each other style's, same trigger and size.", "",
           "| client | partitions a member | trigger | members | style | "
           + " | ".join(f"{heads[m]} ÷" for m in shown) + " |", "|" + "---|" * (5 + len(shown))]
    for p in rows:
        mine = by_group[tuple(p[k] for k in GROUP)]
        cells = [ratio(p.get(f"{m}_median"), mine.get(f"{m}_median")) for m in shown]
        out.append(f"| {p['client']} | {p['partitions_per_member']} | {p['trigger']} | {p['members']} | {p['style']} | "
                   + " | ".join("–" if r is None else f"{times(r)}×" for r in cells) + " |")
    return "\n".join(out)


def fill(text: str, curve: list[dict]) -> str:
    """``text`` with every style-ratios block rewritten from ``curve`` (the page's own curve.csv rows)."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{table(curve, m.group(2))}\n{m.group(3)}", text)
