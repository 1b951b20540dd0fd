"""`kafka-chaos rates`: one scenario run `repeat` times under each combination of a few settings (a client kind, a
transaction version, ...), and per combination how many runs showed each anomaly, with its 95 % Wilson interval.

The zoo asks "does this release have the bug"; a rate table asks "how often does this fault hurt under each
setting" (KAFKA-17754 across clients and transaction versions: docs/kafka-17754.md). As in the zoo, every started run
is in the denominator and a run the harness or the analysis could not finish is counted as failed and shown; a run
whose faults did not all act (an rpc rule that hit no request) is shown apart: its absence of anomalies proves nothing.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import yaml

from harness.bad_input import ScenarioError
from harness.progress import one_line, say
from harness.scenario import Scenario, parse_scenario
from harness.zoo.runner import analysed_run, runs_on_one_cluster, wilson

ANY = "any"  # the runs that showed any of the table's anomaly types
CAUSE = ":"  # a column of one cause of a check's anomalies: stall:hanging_transaction
BLOCK = re.compile(r"(<!-- rates: [^>]*-->\n).*?(<!-- /rates -->)", re.S)
SLOT = re.compile(r"(<!-- rate: ([^>]*?) -->)(.*?)(<!-- /rate -->)", re.S)


def parse_vary(texts: list[str]) -> list[tuple[str, list]]:
    """``--vary consumer_group.client=librdkafka,java-member`` → (dotted key, values); each value read as YAML
    (``1`` a number, ``null`` unset). A key with dots of its own goes in brackets at the end:
    ``cluster.broker_config[transaction.partition.verification.enable]=true,false``."""
    varied = []
    for text in texts:
        key, sep, values = text.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise ScenarioError(f"--vary: {text!r} is not KEY=VALUE[,VALUE...] (e.g. cluster.transaction_version=1,2)")
        if key in dict(varied):
            raise ScenarioError(f"--vary: {key} given twice")
        varied.append((key.strip(), [yaml.safe_load(v.strip()) for v in values.split(",")]))
    return varied


def with_setting(data: dict, key: str, value) -> dict:
    """The scenario dict with the dotted ``key`` set (the folders on its way made where missing)."""
    out = json.loads(json.dumps(data))
    *path, last = key_path(key)
    node = out
    for part in path:
        child = node.get(part)
        if child is not None and not isinstance(child, dict):
            raise ScenarioError(f"--vary: {key}: {part} is not a block of the scenario")
        node = node.setdefault(part, {}) if child is None else child
    node[last] = value
    return out


def key_path(key: str) -> list[str]:
    """``a.b.c`` → [a, b, c]; ``a.b[c.d]`` → [a, b, "c.d"] (a broker setting's name has dots)."""
    if key.endswith("]") and "[" in key:
        head, _, last = key[:-1].partition("[")
        if not head or not last:
            raise ScenarioError(f"--vary: {key} is not PATH[NAME]")
        return [*head.split("."), last]
    return key.split(".")


def value_text(value) -> str:
    """A setting's value as a scenario file says it (``true``, ``null``, ``1``, ``librdkafka``)."""
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def combinations(varied: list[tuple[str, list]]) -> list[dict]:
    """Every combination of the varied settings, in the order given (the first key varies slowest)."""
    keys = [k for k, _ in varied]
    return [dict(zip(keys, values)) for values in product(*(v for _, v in varied))]


def cell_data(base: dict, settings: dict, source: str) -> dict:
    """The scenario one combination runs, as its author's file would say it, checked by the scenario's own rules: a
    combination the harness cannot run is one error naming it and the field, before anything starts."""
    data = base
    for key, value in settings.items():
        data = with_setting(data, key, value)
    parse_scenario(data, f"{source} with {label(settings)}")
    return data


def by_cause(summary: dict) -> dict[str, int]:
    """A check's anomalies by their cause, as columns of their own (``stall:hanging_transaction``: a stall whose
    cause is a hanging transaction, apart from the stalls on delivery), from the checks that count them so."""
    return {f"{name}{CAUSE}{cause}": n for name, said in (summary.get("checks") or {}).items()
            for cause, n in ((said or {}).get("by_cause") or {}).items() if n}


def known_column(name: str, registry) -> bool:
    """An anomaly type, or one of its causes (``stall:hanging_transaction``)."""
    check, sep, cause = name.partition(CAUSE)
    return check in registry and (not sep or bool(cause))


def label(settings: dict) -> str:
    return ", ".join(f"{k}={value_text(v)}" for k, v in settings.items())


@dataclass
class Cell:
    """The runs of one combination."""
    settings: dict
    started: int = 0
    shown: Counter = field(default_factory=Counter)      # anomaly type -> runs in which it appeared
    total: Counter = field(default_factory=Counter)      # anomaly type -> anomalies over the runs
    faults_missed: int = 0                               # analysed runs in which a fault did not act
    invalid: int = 0
    failures: list[str] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)

    def add(self, run_dir: Path | None, summary: dict | None = None, failure: str | None = None) -> None:
        entry = {"run_dir": None if run_dir is None else str(run_dir)}
        if failure is not None:
            self.failures.append(failure)
            entry["failure"] = failure
        else:
            counts = {**{k: n for k, n in summary.get("anomaly_counts", {}).items() if n}, **by_cause(summary)}
            missed = [f["id"] for f in summary.get("faults", []) if f.get("hits") is not None and not f["hits"]]
            self.shown.update(counts.keys())
            self.total.update(counts)
            self.faults_missed += bool(missed)
            self.invalid += summary.get("valid") is False
            entry.update(anomaly_counts=counts, valid=summary.get("valid"), faults_missed=missed,
                         faults=[{k: f.get(k) for k in ("id", "kind", "target", "hits")} for f in summary.get("faults", [])])
        self.runs.append(entry)

    @property
    def analysed(self) -> int:
        return self.started - len(self.failures)

    def rate(self, anomaly: str, columns: list[str] = ()) -> dict:
        """Runs with the anomaly of the runs analysed (a failed run shows nothing either way); ANY: runs with any
        of ``columns``."""
        if anomaly == ANY:
            k = sum(1 for r in self.runs if "failure" not in r and set(r["anomaly_counts"]) & set(columns))
            total = sum(self.total[a] for a in columns)
        else:
            k, total = self.shown[anomaly], self.total[anomaly]
        lo, hi = wilson(k, self.analysed)
        return {"runs": k, "of": self.analysed, "interval": [lo, hi], "anomalies": total}

    def rate_text(self, anomaly: str, columns: list[str] = ()) -> str:
        r = self.rate(anomaly, columns)
        lo, hi = r["interval"]
        return f"{r['runs']} of {r['of']} ({lo:.0%}–{hi:.0%})"

    def to_json(self, anomalies: list[str]) -> dict:
        return {"settings": self.settings, "started": self.started, "analysed": self.analysed,
                "failed": len(self.failures), "failures": self.failures, "faults_missed": self.faults_missed,
                "invalid": self.invalid, "rates": {a: self.rate(a, anomalies) for a in [*anomalies, ANY]},
                "runs": self.runs}


def run_cell(data: dict, settings: dict, repeat: int, runs_root: Path, source: str) -> Cell:
    """``repeat`` runs of the combination on one cluster of its own settings; any failure a failed run."""
    scenario, cell = parse_scenario(data, source), Cell(settings)
    runs_on_one_cluster(scenario, "rates", repeat, cell, f"rates {scenario.name}: {label(settings)}",
                        lambda cluster: _one_run(data, scenario, cluster, runs_root, cell, source))
    return cell


def _one_run(data: dict, scenario: Scenario, cluster, runs_root: Path, cell: Cell, source: str) -> None:
    saying = f"rates {scenario.name} ({label(cell.settings)})"

    def judge(run: Scenario, outcome, summary: dict) -> None:
        cell.add(outcome.run_dir, summary)
        say(f"{saying}: {cell.runs[-1]['anomaly_counts'] or 'no anomaly'}")

    analysed_run(data, scenario.name, cluster, runs_root, source, scenario.analysis.options(), cell, saying, judge)


def columns(cells: list[Cell], asked: list[str] | None) -> list[str]:
    """The anomaly types the table shows: those asked for (shown at 0 when no run had them: an absence measured),
    else every type some run had."""
    return list(asked) if asked else sorted({a for c in cells for a in c.shown})


def markdown(scenario: str, cells: list[Cell], anomalies: list[str], about: dict) -> str:
    keys = list(cells[0].settings) if cells else []
    head = [*keys, *anomalies, *(["any of these"] if len(anomalies) > 1 else []), "faults missed", "invalid", "failed"]
    lines = [f"`{scenario}`, {about['date']} ({about['machine']}; Kafka {about['kafka_version']}): runs that showed "
             "each anomaly of the runs analysed (95 % Wilson interval).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        row = [*(value_text(c.settings[k]) for k in keys), *(c.rate_text(a) for a in anomalies),
               *([c.rate_text(ANY, anomalies)] if len(anomalies) > 1 else []),
               str(c.faults_missed), str(c.invalid), f"{len(c.failures)} of {c.started}"]
        lines.append("| " + " | ".join(row) + " |")
    if not anomalies:
        lines.append("")
        lines.append("No run showed any anomaly.")
    return "\n".join(lines) + "\n"


def write(out: Path, scenario: str, cells: list[Cell], anomalies: list[str], about: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "rates.json").write_text(json.dumps({"scenario": scenario, **about, "anomalies": anomalies,
                                                "cells": [c.to_json(anomalies) for c in cells]}, indent=2,
                                               default=str) + "\n")
    (out / "rates.md").write_text(markdown(scenario, cells, anomalies, about))
    return out / "rates.md"


@dataclass
class Table:
    """A rate table as rates.json keeps it: every figure is made again from its runs' rows, so a page published from
    it says what the runs say, whichever version of this module wrote the file."""
    scenario: str
    anomalies: list[str]
    about: dict
    cells: list[Cell]

    def write(self, out: Path) -> Path:
        return write(out, self.scenario, self.cells, self.anomalies, self.about)


def read(folder: Path) -> Table:
    try:
        data = json.loads((folder / "rates.json").read_text(encoding="utf-8"))
        cells = [_cell(c) for c in data["cells"]]
        about = {k: data[k] for k in ("date", "machine", "kafka_version")}
        return Table(data["scenario"], list(data["anomalies"]), about, cells)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ScenarioError(f"--publish: {folder} holds no rates table ({one_line(exc)})") from None


def _cell(data: dict) -> Cell:
    """A combination's tally, counted again from its runs' rows."""
    cell = Cell(dict(data["settings"]), started=data["started"])
    for run in data["runs"]:
        if "failure" in run:
            cell.add(None, failure=run["failure"])
            cell.runs[-1]["run_dir"] = run.get("run_dir")
        else:
            summary = {"anomaly_counts": run["anomaly_counts"], "valid": run["valid"], "faults": run["faults"]}
            cell.add(Path(run["run_dir"]) if run.get("run_dir") else None, summary)
    return cell


def slot_answer(query: str, table: Table) -> str:
    """A figure of the page's prose: ``SETTING=VALUE[,SETTING=VALUE...] ANOMALY`` → "k of n" for the one combination
    selected; ``* ANOMALY`` → the runs with it over every combination, "k of n"; ANOMALY ``any``: the runs with any
    of the table's."""
    where, _, anomaly = query.strip().rpartition(" ")
    if anomaly not in [*table.anomalies, ANY]:
        raise ScenarioError(f"rate slot {query!r}: {anomaly!r} is not a column of the table ({', '.join(table.anomalies)})")
    wanted = {} if where.strip() == "*" else dict(part.split("=", 1) for part in where.split(",") if "=" in part)
    if where.strip() != "*" and not wanted:
        raise ScenarioError(f"rate slot {query!r}: not SETTING=VALUE[,...] ANOMALY or * ANOMALY")
    chosen = [c for c in table.cells if all(value_text(c.settings.get(k)) == v for k, v in wanted.items())]
    if not chosen or (wanted and len(chosen) != 1):
        raise ScenarioError(f"rate slot {query!r}: selects {len(chosen)} combinations, not one")
    rates = [c.rate(anomaly, table.anomalies) for c in chosen]
    return f"{sum(r['runs'] for r in rates)} of {sum(r['of'] for r in rates)}"


def publish(out: Path, page: Path) -> list[Path]:
    """The table in ``out`` into ``page``: its ``<!-- rates: ... -->`` block replaced by the table, every
    ``<!-- rate: QUERY -->`` slot of its prose rewritten, and the table's rates.md and rates.json written beside the
    page (docs/x.md → docs/x/), each figure counted again from the runs' rows. Nothing is written when the page has
    no block or a slot cannot be answered."""
    table = read(out)
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    if not BLOCK.search(text):
        raise ScenarioError(f"--publish: {page} has no '<!-- rates: ... -->' ... '<!-- /rates -->' block to fill")
    body = markdown(table.scenario, table.cells, table.anomalies, table.about).strip("\n")
    text = BLOCK.sub(lambda m: f"{m.group(1)}{body}\n{m.group(2)}", text, count=1)
    text = SLOT.sub(lambda m: f"{m.group(1)}{slot_answer(m.group(2), table)}{m.group(4)}", text)
    for run in (r for c in table.cells for r in c.runs if r.get("run_dir")):
        run["run_dir"] = Path(run["run_dir"]).name  # the run's name: its folder was this machine's
    folder = page.with_suffix("")
    table.write(folder)
    page.write_text(text, encoding="utf-8")
    return [page, folder / "rates.md", folder / "rates.json"]
