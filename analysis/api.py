"""The analysis's public API: everything the harness calls of it, and nothing it does not (tests/kafkanet/
test_floor.py fails when the harness imports another module of analysis/). A name here is a promise; what sits
behind it (analysis/rundir, engine, checks, figures, pages) may move.

- one run: `analyze(run_dir, ...)` (summary, anomalies, report), `compact(run_dir)` (its logs to Parquet), the
  analysis service (`service`: warm, enabled, check_settings, stop) and `get_session()` (the process's Spark);
- several runs: `compare(run_dirs)`, `check_ran(summary, name)`;
- the checks: `REGISTRY`, `invalid_types()`, a zoo signature over a run (`signature`);
- what a run directory says: its history (`history`), the coordinator's rounds (`coordinator_log`: FILE, STAMP),
  the brokers' slow controller events (`broker_logs`), the events contract (`EVENT_KINDS`), run.json's workload
  phase (`WORKLOAD_PHASE`);
- a trigger's cost (`rebalance_cost`, `status`: the one rule of a settled, valid cell) and the latency around it
  (`latency`); a sweep cell's figures (`cell_figures`, `history_figures` without Spark), each declared once in
  `FIGURES` (and the machine's, `MACHINE`);
- the CLI's commands (`cli`: add_parser, analyze_run, failure_line) and the errors (`InputError`, `AnalysisFailed`).
"""
from analysis import cli
from analysis.checks import REGISTRY, invalid_types, signature
from analysis import service
from analysis.engine.spark import default_parallelism, get_session
from analysis.errors import AnalysisFailed, InputError
from analysis.figures import latency, rebalance_cost
from analysis.figures.cell import FIGURES, MACHINE, ROW_COLUMNS, TABLE, history_figures
from analysis.figures.rebalance_cost import status
from analysis.job import analyze, cell_figures, compare
from analysis.pages.compare import check_ran
from analysis.rundir import broker_logs, coordinator_log, history
from analysis.rundir.compact import compact
from analysis.rundir.contract import EVENT_KINDS, WORKLOAD_PHASE

__all__ = ["EVENT_KINDS", "FIGURES", "MACHINE", "REGISTRY", "ROW_COLUMNS", "TABLE", "WORKLOAD_PHASE", "cell_figures", "history_figures", "AnalysisFailed", "InputError", "analyze", "broker_logs", "check_ran", "cli",
           "compact", "compare", "coordinator_log", "default_parallelism", "get_session", "history", "invalid_types",
           "latency", "rebalance_cost", "service", "signature", "status"]
