"""The bug zoo (scenarios/zoo/): each known consumer-group bug run `repeat` times on the release that had it and
`repeat` times on the release that fixed it, one cluster per release. A bug still open runs on the affected release
only, or beside its contrast: another client kind, without the bug, on the same scenario (zoo.contrast).

A run reproduces a bug only when it shows the bug's own signature (its zoo block; analysis/checks/signature.py over every
anomaly row and event of the run), never because some anomaly of a type appeared. Every started run is in the
denominator: rate = runs with the signature / runs started, with its 95 % Wilson interval, and a run the harness
or the analysis could not finish counts as failed and is shown. The nightly gate compares what was measured with
what the zoo file records (status and rate): :func:`gate`.
"""
from __future__ import annotations

import json
import math
import secrets
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.progress import one_line, say
from harness.scenario import Scenario, ScenarioError, catalog, parse_scenario, unique_names
from harness.settling import settled
from harness.zoo.spec import ZooSpec

ZOO_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "zoo"
SIGNIFICANCE = 0.01          # the nightly's one-sided binomial test
STATUS_WORDS = {"reproduced": "reproduced", "intermittent": "intermittent", "not_reproduced": "not reproduced",
                "open": "open", "also_fixed": "also on the fixed release", "also_contrast": "also on the contrast",
                "inconclusive": "inconclusive", "no_runs": "no runs"}
SIDE_WORDS = {"fixed": "the fixed release", "contrast": "the contrast client"}   # the side that must not show it


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate of k in n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p): how likely a count this low is if the rate is still p."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))


@dataclass
class Tally:
    """The runs of one bug on one release."""
    side: str                    # "affected", "fixed" or "contrast"
    version: str
    started: int = 0
    shown: int = 0               # runs that showed the signature
    not_drained: int = 0         # analysed runs whose group did not settle (harness.settling: a finding, not a failure)
    failures: list[str] = field(default_factory=list)   # one line per run the harness or analysis could not finish
    other: Counter = field(default_factory=Counter)     # anomaly type -> runs in which it appeared outside the signature
    runs: list[dict] = field(default_factory=list)

    def add(self, run_dir: Path | None, match=None, drained: bool = True, failure: str | None = None) -> None:
        entry = {"run_dir": None if run_dir is None else str(run_dir)}
        if failure is not None:
            self.failures.append(failure)
            entry["failure"] = failure
        else:
            self.shown += match.shown
            self.not_drained += not drained
            self.other.update(set(match.other))
            entry.update(match.to_json(), drained=drained)
        self.runs.append(entry)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def rate_text(self) -> str:
        lo, hi = wilson(self.shown, self.started)
        return f"{self.shown} of {self.started} ({lo:.0%}–{hi:.0%})"

    def to_json(self) -> dict:
        lo, hi = wilson(self.shown, self.started)
        return {"side": self.side, "version": self.version, "started": self.started, "shown": self.shown,
                "rate": None if not self.started else self.shown / self.started, "interval": [lo, hi],
                "failed": self.failed, "failures": self.failures, "not_drained": self.not_drained,
                "other": dict(sorted(self.other.items())), "runs": self.runs}


@dataclass
class BugResult:
    """One bug's runs on each release, what they measured, and how that compares with its zoo file."""
    file: str
    spec: ZooSpec
    tallies: dict[str, Tally]
    dates: list[str] = field(default_factory=list)   # when its runs were made (several when tables were merged)

    @property
    def affected(self) -> Tally:
        return self.tallies["affected"]

    @property
    def control(self) -> Tally | None:
        """The runs that must never show the signature: the fixed release's, or the contrast's."""
        return self.tallies.get("fixed") or self.tallies.get("contrast")

    def status(self) -> str:
        """What these runs say: reproduced (the affected rate's interval lies above one half, and no fixed run
        shows the signature), intermittent, not_reproduced, open, also_fixed, also_contrast, inconclusive (most
        runs failed)."""
        a, c = self.affected, self.control
        if a.started == 0:
            return "no_runs"
        if any(2 * t.failed > t.started for t in self.tallies.values()):
            return "inconclusive"
        if c is not None and c.shown:
            return f"also_{c.side}"
        if self.spec.status == "open":
            return "open" if a.shown else "not_reproduced"
        if a.shown and wilson(a.shown, a.started)[0] > 0.5:
            return "reproduced"
        return "intermittent" if a.shown else "not_reproduced"

    def gate(self) -> list[str]:
        """Why this bug turns the nightly red (empty: it does not)."""
        spec, a, c = self.spec, self.affected, self.control
        reasons = [f"{spec.bug}: harness failure on {t.version} ({t.side}) in {t.failed} of {t.started} runs: "
                   f"{t.failures[0]}" for t in self.tallies.values() if t.failed]
        if c is not None and c.shown:
            reasons.append(f"{spec.bug}: the signature showed on {SIDE_WORDS[c.side]} {c.version} in {c.shown} of "
                           f"{c.started} runs")
        if spec.status == "not_reproduced" and a.shown:
            reasons.append(f"{spec.bug}: recorded as not reproduced, now shows on {a.version} in {a.rate_text()}")
        elif spec.status != "not_reproduced" and a.started:
            p = binomial_cdf(a.shown, a.started, spec.rate)
            if p < SIGNIFICANCE:
                hint = " (maybe fixed upstream: check the newest release)" if spec.status == "open" else ""
                reasons.append(f"{spec.bug}: {a.rate_text()} on {a.version}, significantly below its recorded rate "
                               f"{spec.rate:.0%} (one-sided binomial p = {p:.4f} < {SIGNIFICANCE}){hint}")
        return reasons

    def to_json(self) -> dict:
        return {"bug": self.spec.bug, "file": self.file, "spec": self.spec.model_dump(mode="json", exclude_none=True),
                "dates": self.dates, "swap": self.spec.swap, "expected_status": self.spec.status,
                "recorded_rate": self.spec.rate, "status": self.status(), "gate": self.gate(),
                "signature": [p.model_dump(exclude_none=True) for p in self.spec.signature],
                **{side: t.to_json() for side, t in self.tallies.items()}}


def select(names: list[str], folder: Path = ZOO_DIR) -> list[tuple[Path, Scenario]]:
    """The zoo files for the given bugs (KAFKA-14024, librdkafka#4059, or a file name without .yaml); all of
    them when none is given. An unknown name, a folder without zoo files, or a file without a zoo block is bad
    input, before anything starts."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ScenarioError(f"--dir: {folder} is not a folder")
    entries = catalog(folder)
    plain = [p.name for p, s in entries if s.zoo is None]
    if plain:
        raise ScenarioError(f"{folder / plain[0]}: zoo: the file has no zoo block (bug, releases, signature); "
                            f"the zoo folder holds bug files only")
    if not entries:
        raise ScenarioError(f"--dir: {folder} has no zoo files (*.yaml)")
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


def on_side(scenario: Scenario, side: str) -> dict:
    """The zoo scenario (as a scenario dict, without its zoo block) as one side of it runs: the group's client
    release or the brokers' set to the side's release, or, on the contrast, the group's client kind swapped and
    the contrast's client settings laid over the group's."""
    zoo = scenario.zoo
    release = dict(zoo.releases)[side]
    data = scenario.model_dump(mode="json", exclude_unset=True)
    data.pop("zoo", None)
    group = data.get("consumer_group", {})
    if side == "contrast":
        data["consumer_group"] = {**group, "client": zoo.contrast.client, "version": None,
                                  "config": {**group.get("config", {}), **zoo.contrast.config}}
    elif zoo.swap == "brokers":
        data["cluster"] = {**data.get("cluster", {}), "kafka_version": release}
    else:
        data["consumer_group"] = {**group, "version": release}
    return data


def run_bug(path: Path, scenario: Scenario, repeat: int, runs_root: Path) -> BugResult:
    """`repeat` runs on each release, on a cluster of that release's own (brokers swapped) or of the file's."""
    from harness.run import scenario_source
    zoo = scenario.zoo
    result = BugResult(path.name, zoo, {})
    for side, version in zoo.releases:
        tally = result.tallies[side] = Tally(side, version)
        release = parse_scenario(on_side(scenario, side), f"{path} on {version}")
        runs_on_one_cluster(release, "zoo", repeat, tally, f"zoo {zoo.bug}: {side} {version}", lambda cluster: _one_run(
            scenario, release, side, cluster, runs_root, tally, scenario_source(path)))
    return result


def runs_on_one_cluster(scenario: Scenario, prefix: str, repeat: int, tally, saying: str, one_run) -> None:
    """``repeat`` runs, ``one_run(cluster)`` each, on one cluster of the scenario's settings, each counted on
    ``tally`` (its started, and add(None, failure=...)): when the cluster itself fails, the runs it could not hold
    fail with it."""
    from harness.cluster.kafka import KafkaCluster
    try:
        with KafkaCluster(scenario.cluster, run_id=f"{prefix}-{secrets.token_hex(3)}",
                          client_lanes=scenario.client_lanes()) as cluster:
            for i in range(repeat):
                say(f"{saying}, run {i + 1} of {repeat}")
                tally.started += 1
                one_run(cluster)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        reason = f"cluster: {one_line(exc)}"
        while tally.started < repeat:
            tally.started += 1
            tally.add(None, failure=reason)


def analysed_run(data: dict, name: str, cluster, runs_root: Path, source: str, options: dict, tally, saying: str,
                 judge) -> None:
    """One run of the scenario ``data`` on the shared cluster (names of its own: the runs share it), analysed with
    ``options``, then ``judge(run, outcome, summary)`` counts it on ``tally``; a harness error, or any failure, is a
    failed run of ``tally``'s."""
    from analysis.api import analyze
    from harness.run import run_scenario
    run_dir = None
    try:
        cluster.reset_faults()
        run = parse_scenario(unique_names(data, secrets.token_hex(3)), name)
        outcome = run_scenario(run, runs_root, cluster=cluster, source=source)
        run_dir = outcome.run_dir
        if outcome.errors:
            tally.add(run_dir, failure=f"harness: {outcome.errors[0].splitlines()[0]}")
            return
        judge(run, outcome, analyze(run_dir, **options))
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        tally.add(run_dir, failure=one_line(exc))
        say(f"{saying}: run failed: {traceback.format_exc(limit=3)}")


def _one_run(scenario: Scenario, release: Scenario, side: str, cluster, runs_root: Path, tally: Tally,
             source: str) -> None:
    """One run on the shared cluster, analysed and matched against the bug's signature."""
    from analysis.api import signature
    saying = f"zoo {scenario.zoo.bug} {tally.version}"

    def judge(run: Scenario, outcome, summary: dict) -> None:
        unverified = not_run(summary, scenario.zoo)
        if unverified:
            tally.add(outcome.run_dir, failure=f"could not verify: {unverified}")
            return
        match = signature.find(outcome.run_dir, scenario.zoo.resolved(run.settings()))
        tally.add(outcome.run_dir, match, settled(outcome.to_json()))
        say(f"{saying}: signature {'shown' if match.shown else 'not shown'} "
            f"(rows per predicate {match.hits}), other: {dict(match.other) or 'none'}")

    analysed_run(on_side(scenario, side), f"{release.name} on {tally.version}", cluster, runs_root, source,
                 scenario.analysis.options(), tally, saying, judge)


def merge(tables: list[dict]) -> list[BugResult]:
    """Several zoo.json tables (parts measured on different days) as one: the runs of each bug and release added
    up, judged against the newest table's zoo block of that bug."""
    merged: dict[str, BugResult] = {}
    for table in sorted(tables, key=lambda t: str(t.get("date"))):
        for bug in table["bugs"]:
            spec = ZooSpec(**bug["spec"])
            result = merged.setdefault(spec.bug, BugResult(bug["file"], spec, {}))
            result.spec = spec
            result.dates = sorted({*result.dates, *(bug.get("dates") or [str(table.get("date"))])})
            for side, version in spec.releases:
                t = result.tallies.setdefault(side, Tally(side, version))
                part = bug.get(side)
                if not part or part.get("version") != version:
                    continue
                t.started += part["started"]
                t.shown += part["shown"]
                t.not_drained += part.get("not_drained", 0)
                t.failures += part.get("failures", [])
                t.other.update(part.get("other", {}))
                t.runs += part.get("runs", [])
    return list(merged.values())


def rejudge(result: BugResult, spec: ZooSpec) -> BugResult:
    """The same recorded runs judged by another signature (the zoo file's current one): no run is made again.
    Each run is matched over its own directory, with thresholds from its own scenario.yaml."""
    import yaml

    from analysis.api import signature
    again = BugResult(result.file, spec, {}, result.dates)
    for side, old in result.tallies.items():
        t = again.tallies[side] = Tally(side, old.version, started=old.started)
        for run in old.runs:
            run_dir = Path(run["run_dir"]) if run.get("run_dir") else None
            if "failure" in run or run_dir is None:
                t.add(run_dir, failure=run.get("failure") or "no run directory")
                continue
            settings = yaml.safe_load((run_dir / "scenario.yaml").read_text(encoding="utf-8"))
            t.add(run_dir, signature.find(run_dir, spec.resolved(settings)), settled(run))
    return again


def not_run(summary: dict, zoo: ZooSpec) -> str | None:
    """The first check the signature reads that did not run in this analysis (with why), or None: a signature
    over a check that did not run is "could not verify", never "not shown"."""
    from analysis.api import check_ran
    for p in zoo.signature:
        if p.anomaly and not check_ran(summary, p.anomaly):
            c = summary.get("checks", {}).get(p.anomaly) or {}
            return f"the {p.anomaly} check did not run ({c.get('reason') or c.get('error') or c.get('status')})"
    return None


def markdown(results: list[BugResult], date: str) -> str:
    lines = [f"Bug zoo, {date}: runs that showed each bug's signature, per release (rate, 95 % Wilson interval).", "",
             "| bug | measured on | release | with signature | other anomalies (runs) | never caught up | failed | status | expected | nightly |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        gate = "; ".join(r.gate()) or "green"
        for t in r.tallies.values():
            other = ", ".join(f"{k} ({n})" for k, n in sorted(t.other.items())) or "none"
            first = t.side == "affected"
            lines.append(f"| {r.spec.bug if first else ''} | {', '.join(r.dates or [date]) if first else ''} | {t.version} ({t.side}) | {t.rate_text()} | {other} | "
                         f"{t.not_drained} | {t.failed} | {STATUS_WORDS[r.status()] if first else ''} | "
                         f"{(STATUS_WORDS[r.spec.status] + f', {r.spec.rate:.0%}') if first else ''} | "
                         f"{gate if first else ''} |")
    return "\n".join(lines) + "\n"


def write(out: Path, results: list[BugResult], date: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        r.dates = r.dates or [date]
    (out / "zoo.json").write_text(json.dumps({"date": date, "bugs": [r.to_json() for r in results]}, indent=2,
                                             default=str) + "\n")
    (out / "zoo.md").write_text(markdown(results, date))
    return out / "zoo.md"


def listing(entries: list[tuple[Path, Scenario]]) -> str:
    rows, width = [], max((len(s.zoo.bug) for _, s in entries), default=0)
    for path, s in entries:
        z = s.zoo
        control = z.releases[1][1] if len(z.releases) > 1 else "no fix"   # the fixed release or the contrast
        rows.append(f"{z.bug:<{width}} {z.swap:<11} {z.affected:>7} -> {control:<11} "
                    f"expect {STATUS_WORDS[z.status]} ({z.rate:.0%})  {path.name}")
    return "\n".join(rows)
