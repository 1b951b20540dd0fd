"""A sweep cell's figures: what one trigger cost a run, each figure declared once (FIGURES: its name, what it is, its
unit, whether the curve plots it, the steady state a latency rise is read against) and measured here. The sweep asks
for a cell's figures (job.cell_figures, or :func:`history_figures` without Spark) and shows what FIGURES says:
a new figure is its declaration and the code that gives it, in this module or the one it calls.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from analysis.figures import latency, rebalance_cost, state_cost
from analysis.rundir import broker_logs, coordinator_log, history
from analysis.rundir.contract import WORKLOAD_PHASE

STEADY_S = 20  # the latency's steady state: this long before the trigger


class Figure(NamedTuple):
    name: str
    title: str
    unit: str                 # as shown: "s", "ms", "partition-s", "partitions"
    scale: float              # the row's value / scale = the value in its unit
    column: str | None = None  # its column's head in the curve's tables (None: not a column of them)
    plotted: bool = False     # a plot of the curve
    baseline: str | None = None  # a latency rise: the row's steady-state p99 it is read against (saturated above a bound)
    family: str | None = None  # "state": a stateful run's only (a sweep shows it when some cell has it)
    revision: int = 1          # raised when its definition changes: a row of an older one is measured again (--refigure)


FIGURES = (  # in the order of the curve's columns (curve.csv)
    Figure("time_to_stable_ms", "time from trigger to stable", "s", 1000, "time to stable (s)", plotted=True),
    Figure("unserved_longest_ms", "longest time a partition had no live owner", "s", 1000, "longest unserved (s)",
           plotted=True),
    Figure("unserved_partition_s", "partition-seconds without a live owner", "partition-s", 1,
           "unserved (partition-s)", plotted=True),
    Figure("latency_hit_rise_p99_ms", "rise of p99 end-to-end latency on the partitions moved or unserved", "s", 1000,
           "p99 latency rise, moved or unserved partitions (s)", plotted=True, baseline="latency_hit_steady_p99_ms"),
    Figure("latency_rise_p99_ms", "rise of p99 end-to-end latency over every partition", "s", 1000,
           "p99 latency rise, every partition (s)", baseline="latency_steady_p99_ms"),
    Figure("revoked", "partitions revoked", "partitions", 1, "revoked"),
    Figure("moved", "partitions moved", "partitions", 1, "moved"),
    Figure("needed", "partitions that had to move", "partitions", 1, "had to move"),
    Figure("join_phase_ms", "the coordinator's JoinGroup phases (classic)", "ms", 1, "JoinGroup phase (ms)"),
    Figure("assignment_ms", "computing the assignment: the classic leader's, or the KIP-848 coordinator's", "ms", 1,
           "assignment (ms)"),
    Figure("stop_delay_ms", "a crashed member's stop after the harness asked (its batch finished, its consumer "
           "destroyed)", "ms", 1),
    # rebuilt state (analysis/figures/state_cost.py)
    Figure("restore_ms", "the longest restore of one partition's state", "s", 1000, "longest restore (s)",
           plotted=True, family="state"),
    Figure("records_replayed", "changelog records the restores read", "records", 1, "records replayed", plotted=True,
           family="state"),
    Figure("first_processing_ms", "the longest from a partition's assignment to its first record processed, or to "
           "its owner losing it unprocessed", "s", 1000, "assigned to first processed (s)", plotted=True,
           family="state", revision=2),
    Figure("restores", "restores of a partition's state", "restores", 1, "restores", family="state"),
)
# the curve's tables: the figures with a column, in this order (the partitions moved beside the time they took)
TABLE = ("time_to_stable_ms", "unserved_longest_ms", "unserved_partition_s", "revoked", "moved", "needed",
         "latency_hit_rise_p99_ms", "latency_rise_p99_ms", "join_phase_ms", "assignment_ms", "restores", "restore_ms",
         "records_replayed", "first_processing_ms")
# what the machine was like while a cell was measured (its window and the 20 s before it): members whose session
# expired (a crash's own member is one), the brokers' slow controller events (analysis/rundir/broker_logs.py); and
# the machine's CPU pressure over the workload
MACHINE = ("sessions_expired", "broker_stalls", "broker_stall_max_ms", "cpu_pressure_pct")
# a cell's row as the analysis gives it, in the order of the sweep's cells.csv
ROW_COLUMNS = ("settled", "valid", "anomalies", "lost", "duplicates", "trigger_from", "stop_delay_ms", "time_to_stable_ms",
               "first_change_ms", "rebalances", "unserved_longest_ms", "unserved_partition_s", "unserved_partitions",
               "revoked", "moved", "needed", "latency_steady_p99_ms", "latency_window_p99_ms", "latency_window_max_ms",
               "latency_rise_p99_ms", "latency_hit_steady_p99_ms", "latency_hit_window_p99_ms",
               "latency_hit_window_max_ms", "latency_hit_rise_p99_ms", "coordinator_rounds", "join_phase_ms",
               "assignment_ms", *MACHINE, *state_cost.FIGURES)
FAMILY = {f.name: f.family for f in FIGURES if f.family}
REVISIONS = {f.name: f.revision for f in FIGURES if f.revision > 1}  # a row carries them (figure_revisions)
SPARK_FIGURES = tuple(f.name for f in FIGURES if f.baseline)  # the latency figures: the others come from the history


def stale(row: dict, names) -> list[str]:
    """The figures of ``names`` a sweep row lacks, or has by an older definition than today's (REVISIONS)."""
    revisions = row.get("figure_revisions") or {}
    return [n for n in names if n not in row or revisions.get(n, 1) < REVISIONS.get(n, 1)]


def applies(name: str, rows: list[dict]) -> bool:
    """Whether a figure (or a row's column) belongs in a sweep's outputs: every figure but a family's, which only
    when some row has a value for it (a stateless sweep's pages stay as they were)."""
    return name not in FAMILY or any(r.get(name) is not None or r.get(f"{name}_n") for r in rows)


def figures_of(summary: dict, run_dir: Path, partitions: list[tuple[str, int]], members: int, observe_ms: int,
               spark) -> dict:
    """A cell's figures: the analysis's verdict and counts (``summary``: the run's, analysed; job.cell_figures
    analyses it), the trigger's cost and the machine's state in its window (:func:`history_figures`), the latency
    around it: over every partition, and over those the trigger moved or left unserved, each against its own steady
    state before the trigger."""
    figures, hit = history_figures(run_dir, partitions, members, observe_ms)
    t0 = figures["trigger_ms"]
    windows = {"steady": (t0 - STEADY_S * 1000, t0), "window": (t0, figures["window_end_ms"])}
    counts = summary.get("anomaly_counts") or {}
    return {**figures, "valid": summary.get("valid"), "lost": summary.get("lost_records"),
            "duplicates": summary.get("duplicate_extra_deliveries"),
            "anomalies": {kind: n for kind, n in sorted(counts.items()) if n},
            **latency_figures("", latency.delivery_latency(spark, run_dir, windows)),
            **latency_figures("hit_", latency.delivery_latency(spark, run_dir, windows, partitions=hit) if hit
                              else None)}


def latency_figures(prefix: str, lat: dict | None) -> dict:
    """latency_<prefix>steady_p99_ms, _window_p99_ms, _window_max_ms and _rise_p99_ms of one latency measure (None:
    nothing to measure)."""
    steady, window = (lat or {}).get("steady", {}), (lat or {}).get("window", {})
    low, high = steady.get("p99_ms"), window.get("p99_ms")
    return {f"latency_{prefix}steady_p99_ms": low, f"latency_{prefix}window_p99_ms": high,
            f"latency_{prefix}window_max_ms": window.get("max_ms"),
            f"latency_{prefix}rise_p99_ms": None if None in (low, high) else round(high - low, 1)}


def history_figures(run_dir: Path, partitions: list[tuple[str, int]], members: int, observe_ms: int) -> tuple[dict, list]:
    """The figures the run directory gives without Spark: the trigger's cost (rebalance_cost, the coordinator's
    rounds with it), the brokers' slow controller events and the members whose session expired, in the window and
    the steady state before it, and the machine's CPU pressure over the workload (run.json); and the partitions the
    trigger moved or left unserved. ``partitions``: every partition the figures cover, those the trigger adds too."""
    h = history.build(run_dir)
    fault = h.faults[0]
    window_end = rebalance_cost.window_end(h, fault, observe_ms)
    figures = rebalance_cost.cost(h, fault, partitions, members, window_end)
    hit = figures.pop("hit_partitions")
    # the machine over all the cell measured: the window and the steady state before it (the latency's baseline)
    since = min(figures["trigger_ms"], fault.injected_at_ms) - STEADY_S * 1000
    figures |= broker_logs.stalls_in(broker_logs.slow_controller_events(run_dir), since, window_end)
    figures["sessions_expired"] = coordinator_log.expired_between(coordinator_log.summary(h), since, window_end)
    run = json.loads((run_dir / "run.json").read_text())
    figures["cpu_pressure_pct"] = (run.get("cpu_pressure_pct") or {}).get(WORKLOAD_PHASE)
    figures |= state_cost.state_figures(h, figures["trigger_ms"], window_end)
    figures["figure_revisions"] = dict(REVISIONS)
    return figures, hit
