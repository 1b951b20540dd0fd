"""The nightly job's verdict: green when nothing changed, red when something did, and which thing.

It reads what the night wrote into its own folder (``make nightly`` puts everything there):
- ``junit.xml`` of the slow pytest families: a failed assertion is a catalog scenario's stated expectation that
  failed; any other failure or error is the harness itself failing;
- ``zoo.json`` of ``kafka-chaos zoo``: each bug's gate (harness/zoo/runner.py: below its recorded rate, shown on a
  fixed release or on an open bug's contrast client, shown though recorded as not reproduced, an open bug that
  stopped showing);
- the trend page's ``trend.json``: points outside their series' last nights, listed but not red by themselves;
- ``families.json`` (harness/nightly/families.py): the fault families the night's tests really ran; one that the last
  complete night before it ran and this complete night did not is red (a test that stopped injecting it);
- ``exit-codes`` (one "step code" a line) when the make target records them: a step that crashed before it
  wrote its file.
It writes ``summary.md`` (what a CI job summary shows) and exits 0 (green) or 1 (red).
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Verdict:
    expectations: list[str] = field(default_factory=list)   # catalog scenarios whose stated expectation failed
    zoo: list[str] = field(default_factory=list)            # bugs that moved
    harness: list[str] = field(default_factory=list)        # the harness itself failed
    families: list[str] = field(default_factory=list)       # fault families the last complete night ran, not this one
    outliers: list[str] = field(default_factory=list)       # trend points outside their series (not red alone)
    ran: list[str] = field(default_factory=list)            # what this night ran

    @property
    def red(self) -> bool:
        return bool(self.expectations or self.zoo or self.harness or self.families)

    def markdown(self, night: Path) -> str:
        lines = [f"# kafka-chaos nightly {night.name}: {'RED' if self.red else 'GREEN'}", "",
                 "Ran: " + (", ".join(self.ran) or "nothing"), ""]
        for title, items in (("Catalog expectations that failed", self.expectations), ("Zoo bugs that moved", self.zoo),
                             ("Harness failures", self.harness),
                             ("Fault families the last complete night ran and this one did not", self.families), ("Trend points outside their series' last nights",
                                                                  self.outliers)):
            lines.append(f"## {title}: {len(items)}")
            lines += [f"- {item}" for item in items] or ["- none"]
            lines.append("")
        return "\n".join(lines)


def _first_line(text: str | None) -> str:
    text = (text or "").strip()
    return text.splitlines()[0][:300] if text else ""


def read_junit(path: Path, verdict: Verdict) -> None:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        verdict.harness.append(f"{path}: unreadable JUnit XML ({exc})")
        return
    cases = root.iter("testcase")
    n = 0
    for case in cases:
        n += 1
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        for tag in ("failure", "error"):
            for node in case.findall(tag):
                message = _first_line(node.get("message")) or _first_line(node.text)
                if tag == "failure" and message.startswith("AssertionError"):
                    verdict.expectations.append(f"{test}: {message}")
                else:
                    verdict.harness.append(f"{test}: {message}")
    verdict.ran.append(f"{n} slow tests ({path.name})")


def read_zoo(path: Path, verdict: Verdict) -> None:
    try:
        bugs = json.loads(path.read_text(encoding="utf-8"))["bugs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        verdict.harness.append(f"{path}: unreadable zoo table ({type(exc).__name__}: {exc})")
        return
    for bug in bugs:
        for reason in bug.get("gate") or []:
            (verdict.harness if ": harness failure on " in reason else verdict.zoo).append(reason)
    verdict.ran.append(f"{len(bugs)} zoo bugs ({path.name})")


def read_trend(path: Path, verdict: Verdict) -> None:
    try:
        outliers = json.loads(path.read_text(encoding="utf-8")).get("outliers") or []
    except (OSError, ValueError, AttributeError) as exc:
        verdict.outliers.append(f"{path}: unreadable ({type(exc).__name__})")
        return
    for o in outliers:
        verdict.outliers.append(o if isinstance(o, str) else o.get("text") or json.dumps(o, sort_keys=True))


def read_exit_codes(path: Path, verdict: Verdict, written: set[str]) -> None:
    """A step that ended other than green or "found something" is a harness failure, unless its own file already
    says which runs failed (the zoo's exit 3)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        step, _, code = line.strip().partition(" ")
        if code in ("0", "1") or (step == "zoo" and code == "3" and step in written):
            continue
        what = "selected no test" if step == "pytest" and code == "5" else f"exited {code}"
        verdict.harness.append(f"{step} {what}" + ("" if step in written else " without writing its results"))


def read_families(night: Path, verdict: Verdict) -> None:
    """Compared with the last night before it (a sibling folder, by name) whose families.json ran the same selection:
    every family test, or the same FAMILY part (the nightly workflow runs the families in two parts, each with its own
    folder of nights); a night of another selection ran another part on purpose."""
    def ledger(folder: Path) -> dict | None:
        try:
            data = json.loads((folder / "families.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("ran"), dict) else None

    now = ledger(night)
    if now is None:
        verdict.harness.append(f"{night / 'families.json'}: missing or unreadable")
        return
    verdict.ran.append(f"{len(now['ran'])} fault families")
    before = [f for f in sorted(night.parent.iterdir()) if f.is_dir() and f.name < night.name]
    previous = next((d for d in (ledger(f) for f in reversed(before)) if d and d.get("selection") == now.get("selection")),
                    None)
    which = "complete night" if now.get("selection") == "all" else "night of this part"
    if previous is not None:
        verdict.families += [f"{family} (ran {previous['ran'][family]} times the last {which})"
                             for family in sorted(previous["ran"]) if family not in now["ran"]]


def judge(night: Path, trend: Path | None = None) -> Verdict:
    verdict, written = Verdict(), set()
    if (night / "junit.xml").is_file():
        read_families(night, verdict)
        read_junit(night / "junit.xml", verdict)
        written.add("pytest")
    if (night / "zoo.json").is_file():
        read_zoo(night / "zoo.json", verdict)
        written.add("zoo")
    if trend is not None and trend.is_file():
        read_trend(trend, verdict)
    if (night / "exit-codes").is_file():
        read_exit_codes(night / "exit-codes", verdict, written)
    return verdict
