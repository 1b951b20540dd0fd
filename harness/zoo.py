"""The bug zoo (scenarios/zoo/): each known consumer-group bug run on the client release that had it and on the
release that fixed it, `repeat` times each, on one cluster per bug; a table of the runs in which the bug's
expected anomaly appeared, and of the other anomalies seen.

A bug counts as reproduced when its expected anomaly appears in most runs on the affected release and in
none on the fixed one. The checks are the analysis's own, the same for every scenario.
"""
from __future__ import annotations

import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.progress import say
from harness.scenario import Scenario, ScenarioError, catalog, parse_scenario, unique_names

ZOO_DIR = Path(__file__).resolve().parents[1] / "scenarios" / "zoo"


@dataclass
class Tally:
    """The runs of one bug on one release."""
    bug: str
    release: str                 # "affected" or "fixed"
    version: str
    expect: list[str]
    runs: int = 0
    reproduced: int = 0          # runs in which an expected anomaly appeared
    failed: int = 0              # runs the harness could not complete or analyse (not counted above)
    not_drained: int = 0         # runs whose group never caught up (analysed: that is a finding, not a failure)
    other: Counter = field(default_factory=Counter)   # anomaly type -> runs in which it appeared, not expected
    run_dirs: list[str] = field(default_factory=list)

    def add(self, run_dir: Path, summary: dict | None, failures: list[str], drained: bool = True) -> None:
        self.run_dirs.append(str(run_dir))
        if failures or summary is None:
            self.failed += 1
            return
        self.runs += 1
        self.not_drained += not drained
        found = {t for t, n in summary["anomaly_counts"].items() if n}
        self.reproduced += bool(found & set(self.expect))
        self.other.update(found - set(self.expect))

    def to_json(self) -> dict:
        return {"bug": self.bug, "release": self.release, "version": self.version, "expect": self.expect,
                "runs": self.runs, "reproduced": self.reproduced, "failed": self.failed, "not_drained": self.not_drained,
                "other": dict(sorted(self.other.items())), "run_dirs": self.run_dirs}


def verdict(affected: Tally, fixed: Tally) -> str:
    if affected.runs == 0 or fixed.runs == 0:
        return "no complete runs"
    if 2 * affected.reproduced > affected.runs and fixed.reproduced == 0:
        return "reproduced"
    if fixed.reproduced:
        return "also on the fixed release"
    return "not reproduced" if affected.reproduced == 0 else "below half of the runs"


def select(names: list[str], folder: Path = ZOO_DIR) -> list[tuple[Path, Scenario]]:
    """The zoo files for the given bugs (KAFKA-14024, librdkafka#4059, or a file name without .yaml); all of
    them when none is given. An unknown name is bad input, before anything starts."""
    entries = catalog(folder)
    if not names:
        return entries
    chosen = []
    for name in names:
        hits = [(p, s) for p, s in entries if name.casefold() in (s.zoo.bug.casefold(), p.stem.casefold())]
        if not hits:
            known = ", ".join(f"{s.zoo.bug} ({p.stem})" for p, s in entries)
            raise ScenarioError(f"BUG: {name!r} is not in the zoo; it has {known}")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def on_release(scenario: Scenario, version: str) -> dict:
    """The zoo scenario (as a scenario dict, without its zoo block) with the group's client release swapped."""
    data = scenario.model_dump(mode="json", exclude_unset=True)
    data.pop("zoo", None)
    data["consumer_group"] = {**data.get("consumer_group", {}), "version": version}
    return data


def run_bug(scenario: Scenario, repeat: int, runs_root: Path) -> tuple[Tally, Tally]:
    """`repeat` runs on the affected release, then `repeat` on the fixed one, all on one cluster."""
    from analysis import analyze
    from harness.cluster import KafkaCluster
    from harness.run import run_scenario
    zoo = scenario.zoo
    tallies = (Tally(zoo.bug, "affected", zoo.affected, zoo.expect), Tally(zoo.bug, "fixed", zoo.fixed, zoo.expect))
    lanes = scenario.client_lanes()
    with KafkaCluster(scenario.cluster, run_id=f"zoo-{secrets.token_hex(3)}", client_lanes=lanes) as cluster:
        for tally in tallies:
            for i in range(repeat):
                say(f"zoo {zoo.bug}: {tally.release} release {tally.version}, run {i + 1} of {repeat}")
                cluster.reset_faults()
                run = parse_scenario(unique_names(on_release(scenario, tally.version), secrets.token_hex(3)),
                                     f"{scenario.name} on {tally.version}")  # names of its own: runs share the cluster
                outcome = run_scenario(run, runs_root, cluster=cluster)
                summary = None if outcome.failures else analyze(outcome.run_dir, **scenario.analysis.options())
                tally.add(outcome.run_dir, summary, outcome.failures, outcome.drained)
                found = {t: n for t, n in (summary or {}).get("anomaly_counts", {}).items() if n}
                say(f"zoo {zoo.bug} {tally.version}: {'harness failed' if summary is None else found or 'no anomaly'}")
    return tallies


def markdown(rows: list[tuple[Tally, Tally]], date: str) -> str:
    lines = [f"Bug zoo, {date}: runs in which the expected anomaly appeared, per release.", "",
             "| bug | expected | release | runs | expected anomaly in | other anomalies (runs) | never caught up | failed runs | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for affected, fixed in rows:
        for t in (affected, fixed):
            other = ", ".join(f"{k} ({n})" for k, n in sorted(t.other.items())) or "none"
            lines.append(f"| {t.bug} | {', '.join(t.expect)} | {t.version} ({t.release}) | {t.runs} | "
                         f"{t.reproduced} of {t.runs} | {other} | {t.not_drained} | {t.failed} | "
                         f"{verdict(affected, fixed) if t is affected else ''} |")
    return "\n".join(lines) + "\n"


def write(out: Path, rows: list[tuple[Tally, Tally]], date: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo.json").write_text(json.dumps({"date": date, "bugs": [
        {"verdict": verdict(a, f), "affected": a.to_json(), "fixed": f.to_json()} for a, f in rows]}, indent=2) + "\n")
    (out / "zoo.md").write_text(markdown(rows, date))
    return out / "zoo.md"
