"""The analysis's public API: everything the harness, the benchmarks and the tests outside tests/analysis/ call of
it, and nothing they do not (tests/kafkanet/test_floor.py fails when one of them imports another module of
analysis/). A name here is a promise; what sits behind it (analysis/rundir, engine, checks, figures, pages) may move.

- one run: `analyze(run_dir, ...)` (summary, anomalies, report), `compact(run_dir)` (its logs to Parquet), the
  analysis service (`service`: warm, enabled, check_settings, stop), the process's Spark (`get_session()`,
  `default_parallelism`, `stop_session()`) and a synthetic run directory (`write_synthetic_run`);
- several runs: `compare(run_dirs)`, `check_ran(summary, name)`, the trend's series (`trend`: collect);
- the checks: `REGISTRY`, `invalid_types()`, `checks_needing(...)` (what a plain run does not run), a zoo signature over a run (`signature`: find, Match);
- what a run directory says: its history (`history`), the coordinator's rounds (`coordinator_log`: FILE, STAMP),
  the brokers' slow controller events (`broker_logs`), the contract (`contract`; `EVENT_KINDS`), run.json's
  workload phase (`WORKLOAD_PHASE`), output-topic mode's file (`OUTPUT_FILE`);
- a trigger's cost (`rebalance_cost`, `status`: the one rule of a settled, valid cell) and the latency around it
  (`latency`); a sweep cell's figures (`cell_figures`, `history_figures` without Spark), each declared once in
  `FIGURES` (and the machine's, `MACHINE`);
- the CLI's commands (`cli`: add_parser, analyze_run, failure_line) and the errors (`InputError`, `AnalysisFailed`).

Each name loads its module on first use, so `from analysis.api import cli` does not load Spark's plan, and the
harness's `--help` costs no more than the modules it asks for.
"""
from __future__ import annotations

import importlib

# name -> (module, attribute in it; None: the module itself)
_WHERE = {
    "cli": ("analysis.cli", None),
    "REGISTRY": ("analysis.checks", "REGISTRY"),
    "invalid_types": ("analysis.checks", "invalid_types"),
    "checks_needing": ("analysis.checks", "checks_needing"),
    "signature": ("analysis.checks.signature", None),
    "service": ("analysis.service", None),
    "get_session": ("analysis.engine.spark", "get_session"),
    "default_parallelism": ("analysis.engine.spark", "default_parallelism"),
    "stop_session": ("analysis.engine.spark", "stop_session"),
    "write_synthetic_run": ("analysis.engine.synthetic", "write_run"),
    "AnalysisFailed": ("analysis.errors", "AnalysisFailed"),
    "InputError": ("analysis.errors", "InputError"),
    "latency": ("analysis.figures.latency", None),
    "rebalance_cost": ("analysis.figures.rebalance_cost", None),
    "status": ("analysis.figures.rebalance_cost", "status"),
    "FIGURES": ("analysis.figures.cell", "FIGURES"),
    "NOT_APPLICABLE": ("analysis.checks.framework", "NOT_APPLICABLE"),
    "NOT_APPLICABLE_REASONS": ("analysis.checks.framework", "NOT_APPLICABLE_REASONS"),
    "FINAL_STATE_FILE": ("analysis.rundir.state", "FINAL_FILE"),
    "FAMILY": ("analysis.figures.cell", "FAMILY"),
    "applies": ("analysis.figures.cell", "applies"),
    "MACHINE": ("analysis.figures.cell", "MACHINE"),
    "SPARK_FIGURES": ("analysis.figures.cell", "SPARK_FIGURES"),
    "stale": ("analysis.figures.cell", "stale"),
    "ROW_COLUMNS": ("analysis.figures.cell", "ROW_COLUMNS"),
    "TABLE": ("analysis.figures.cell", "TABLE"),
    "history_figures": ("analysis.figures.cell", "history_figures"),
    "analyze": ("analysis.job", "analyze"),
    "cell_figures": ("analysis.job", "cell_figures"),
    "compare": ("analysis.job", "compare"),
    "check_ran": ("analysis.pages.compare", "check_ran"),
    "trend": ("analysis.pages.trend", None),
    "broker_logs": ("analysis.rundir.broker_logs", None),
    "coordinator_log": ("analysis.rundir.coordinator_log", None),
    "history": ("analysis.rundir.history", None),
    "compact": ("analysis.rundir.compact", "compact"),
    "contract": ("analysis.rundir.contract", None),
    "EVENT_KINDS": ("analysis.rundir.contract", "EVENT_KINDS"),
    "WORKLOAD_PHASE": ("analysis.rundir.contract", "WORKLOAD_PHASE"),
    "OUTPUT_FILE": ("analysis.rundir.contract", "OUTPUT_FILE"),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"analysis.api has no {name!r}: its names are {', '.join(__all__)}")
    module, attribute = _WHERE[name]
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
