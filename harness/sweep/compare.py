"""Two published curves side by side, point by point (the Java client's against librdkafka's): a page's compare block,
``<!-- compare: A/curve.csv B/curve.csv -->`` ... ``<!-- /compare -->`` (the paths relative to the page), is
rewritten from the two curve.csv files each time the page is published, so the comparison never quotes a figure by
hand. Only the points both curves hold are compared. Two curves of one client (a sweep against its variant: the
state-rebuild join with keep_on_revoke) are named by their folders; two stateful curves compare their state
figures too."""
from __future__ import annotations

import csv
import re
from pathlib import Path

from harness.scenario import ScenarioError

from .outputs import STYLE_ORDER, figure_text

BLOCK = re.compile(r"(<!-- compare: (\S+) (\S+) -->\n).*?(<!-- /compare -->)", re.S)
MATCHED = ("partitions_per_member", "trigger", "style", "members")  # a point's key, less its client
RATIOS = ("time_to_stable_ms", "unserved_longest_ms", "unserved_partition_s")  # the figures whose ratio means something
SIDE_BY_SIDE = ("latency_hit_rise_p99_ms",)  # of either sign, and saturated on a busy machine: shown, never divided
HEADS = {"time_to_stable_ms": "to stable (s)", "unserved_longest_ms": "longest unserved (s)",
         "unserved_partition_s": "unserved (partition-s)",
         "latency_hit_rise_p99_ms": "p99 latency rise, moved or unserved partitions (s)"}
STATE_HEADS = {"restores": "restores", "records_replayed": "records replayed",
               "first_processing_ms": "assigned to first processed (s)"}


def read_curve(path: Path) -> list[dict]:
    """A curve.csv as the sweep wrote it, its numbers numbers again and its empty cells None."""
    with path.open(newline="", encoding="utf-8") as source:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(source)]


def _number(text: str):
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def ratio(a: float | None, b: float | None) -> float | None:
    """b over a; None when either is missing or a is not above zero."""
    return b / a if a is not None and b is not None and a > 0 else None


def times(r: float) -> str:
    """A ratio as the pages write it: two significant digits, from 100 on a whole number (never 1e+02)."""
    return f"{r:.2g}" if abs(r) < 100 else f"{r:,.0f}"


def compare(a: list[dict], b: list[dict], folders: tuple[str, str] = ("a", "b")) -> str:
    """Markdown: one table a (partitions per member, trigger); a row a style and size both curves hold, with each
    side's valid repeats and figures (outputs.figure_text: n beside each), and b's median over a's (÷) for the
    figures in RATIOS (and STATE_HEADS', when both curves are stateful) where both have a median (outputs.FEW values or
    more). A side is named by its client, or by its folder (``folders``) when both are of one client."""
    name_a, name_b = _client(a), _client(b)
    if name_a == name_b:
        name_a, name_b = folders
    ratios = RATIOS + (tuple(STATE_HEADS) if stateful(a) and stateful(b) else ())
    by_key = {tuple(p[k] for k in MATCHED): p for p in b}
    pairs = [(p, by_key[key]) for p in a if (key := tuple(p[k] for k in MATCHED)) in by_key]
    pairs.sort(key=lambda pair: (pair[0]["partitions_per_member"], pair[0]["trigger"],
                                 STYLE_ORDER.get(pair[0]["style"], len(STYLE_ORDER)), pair[0]["members"]))
    out = [f"Each figure over a point's settled and valid repeats, with their count n (the median [range] from 3, "
           f"the values under 3); ÷ is {name_b}'s median over {name_a}'s.", ""] if pairs else []
    for ppm, trigger in dict.fromkeys((p["partitions_per_member"], p["trigger"]) for p, _ in pairs):
        head = ["style", "members", f"valid / cells: {name_a} · {name_b}"]
        for metric in ratios + SIDE_BY_SIDE:
            head += [f"{(HEADS | STATE_HEADS)[metric]}: {name_a}", name_b] + (["÷"] if metric in ratios else [])
        out += [f"### {ppm} partitions a member: {trigger}", "", "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head)]
        for pa, pb in ((pa, pb) for pa, pb in pairs if (pa["partitions_per_member"], pa["trigger"]) == (ppm, trigger)):
            cells = [pa["style"], str(pa["members"]), f"{pa['valid']}/{pa['cells']} · {pb['valid']}/{pb['cells']}"]
            for metric in ratios + SIDE_BY_SIDE:
                cells += [figure_text(p, metric) for p in (pa, pb)]
                if metric in ratios:
                    r = ratio(pa.get(f"{metric}_median"), pb.get(f"{metric}_median"))
                    cells.append("–" if r is None else f"{times(r)}×")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).strip("\n") or "(no point both curves hold)"


def stateful(curve: list[dict]) -> bool:
    """A stateful sweep's curve: its points carry the state figures."""
    return any(p.get("records_replayed_n") for p in curve)


def _client(curve: list[dict]) -> str:
    clients = {p["client"] for p in curve}
    return clients.pop() if len(clients) == 1 else " + ".join(sorted(map(str, clients))) or "?"


def named_curves(page: Path, text: str) -> list[tuple[str, Path]]:
    """The curves ``text``'s compare blocks name, each as written and as a path."""
    return [(name, page.parent / name) for match in BLOCK.finditer(text) for name in match.group(2, 3)]


def check(page: Path, text: str, written: set[Path] = frozenset()) -> None:
    """ScenarioError unless every curve a compare block names is there, or among the files about to be ``written``."""
    coming = {path.resolve() for path in written}
    for name, path in named_curves(page, text):
        if not path.is_file() and path.resolve() not in coming:
            raise ScenarioError(f"--publish: {page}'s compare block names {name}, which is not there ({path})")


def fill(page: Path, text: str) -> str:
    """``text`` (the page's) with every compare block rewritten from the curves it names (see check)."""
    def table(match: re.Match) -> str:
        a, b = (read_curve(page.parent / name) for name in match.group(2, 3))
        folders = tuple(Path(name).parent.name or name for name in match.group(2, 3))
        return f"{match.group(1)}{compare(a, b, folders)}\n{match.group(4)}"
    return BLOCK.sub(table, text)
