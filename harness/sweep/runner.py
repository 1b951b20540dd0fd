"""`kafka-chaos sweep`: every cell of a sweep file run on one cluster, one row a cell, resumable.

A cell is an ordinary run (harness.run.run_scenario: the same plan, faults, settling rule and run directory), analysed
as any run is, then measured by analysis.rebalance_cost over its trigger's window and analysis.latency. Its topics
are deleted once it ends (the brokers' replica bound). A cell whose group did not settle is a result (`unsettled`);
one the harness could not finish is `failed` and runs again when the sweep resumes.
"""
from __future__ import annotations

import secrets
import time
import traceback
from pathlib import Path

from harness.progress import one_line, say
from harness.scenario import parse_scenario, unique_names
from harness.settling import settled
from harness.sweep.spec import Cell, SweepSpec
from harness.sweep.store import SweepDir

CONSECUTIVE_FAILURES = 3  # the cluster is likely gone: stop rather than fail every cell left
STEADY_S = 20             # the latency's steady state: this long before the trigger


class SweepFailed(RuntimeError):
    """The sweep stopped before its end (the CLI: exit 3); the finished cells are kept."""


def lanes_for(spec: SweepSpec) -> tuple[str, ...]:
    """Every client lane any cell needs (the cluster is started once, for all of them)."""
    lanes: dict[str, None] = {}
    for cell in spec.cells():
        lanes.update(dict.fromkeys(parse_scenario(spec.cell_scenario(cell), cell.id).client_lanes()))
    return tuple(lanes)


def run_sweep(spec: SweepSpec, source: str, out: Path) -> list[dict]:
    """Run the cells not finished yet in `out` (all of them for a new folder) on a cluster of the sweep's own;
    returns every row."""
    folder = SweepDir(out)
    done = folder.open(spec, source)
    todo = [cell for cell in spec.cells() if cell.id not in done]
    say(f"sweep {spec.name}: {len(spec.cells())} cells, {len(done)} finished before, {len(todo)} to run; in {out}")
    if todo:
        from harness.cluster.kafka import KafkaCluster
        with KafkaCluster(spec.cluster, run_id=f"sweep-{spec.name}-{secrets.token_hex(3)}",
                          client_lanes=lanes_for(spec)) as cluster:
            _run_cells(spec, todo, folder, cluster)
    from harness.sweep.outputs import write_outputs
    write_outputs(folder)
    return list(folder.finished().values())


def refigure_sweep(spec: SweepSpec, source: str, out: Path) -> list[dict]:
    """Measure again, from its run directory and with no cluster, every finished cell whose row lacks a figure the
    sweep now gives (outputs.METRICS, outputs.MACHINE): a cell measured before the analysis gained it. A cell that
    ran before coordinator.log existed gets it from the brokers' logs its run kept; one that lacks only figures of
    its history is measured without Spark (history_figures). Each cell's new row is appended (the latest row of a
    cell is its row); returns every row."""
    import json
    from analysis.spark import get_session
    from harness import coordinator_log
    from harness.sweep.outputs import MACHINE, METRICS, write_outputs
    folder = SweepDir(out)
    done = folder.open(spec, source)
    cells = {cell.id: cell for cell in spec.cells()}
    lacks = lambda row, figures: any(f not in row for f in figures)  # noqa: E731
    todo = [row for row in done.values() if row.get("run_dir") and Path(row["run_dir"]).is_dir() and row["cell"] in cells
            and row["status"] != "failed" and lacks(row, (*METRICS, *MACHINE))]
    spark = get_session() if any(lacks(row, METRICS) for row in todo) else None
    say(f"sweep {spec.name}: {len(todo)} of {len(done)} finished cells lack a figure; measuring them again"
        + ("" if spark or not todo else " from their histories, without Spark"))
    for i, row in enumerate(todo):
        run_dir = Path(row["run_dir"])
        say(f"sweep refigure {i + 1} of {len(todo)}: {row['cell']}")
        plan = json.loads((run_dir / "plan.json").read_text())
        if not (run_dir / coordinator_log.FILE).exists():
            coordinator_log.write(run_dir, plan["group_id"])
        cell, topic = cells[row["cell"]], plan["topics"][0]["name"]
        try:
            figures = (measure(spec, cell, run_dir, topic, spark) if lacks(row, METRICS)
                       else history_figures(spec, cell, run_dir, topic))
        except Exception as exc:  # the row stays as it was measured
            say(f"sweep cell {row['cell']}: not measured again ({one_line(exc)})")
            continue
        folder.append({**row, **figures})
    write_outputs(folder)
    return list(folder.finished().values())


def _run_cells(spec: SweepSpec, todo: list[Cell], folder: SweepDir, cluster) -> None:
    from analysis.spark import get_session
    from harness.sweep.outputs import write_outputs
    spark = get_session()
    took: dict[int, list[float]] = {}
    failures = 0
    for i, cell in enumerate(todo):
        say(f"sweep cell {i + 1} of {len(todo)}: {cell.id}; {time_left(todo[i:], took)}")
        started = time.monotonic()
        row = run_cell(spec, cell, cluster, folder.runs, spark)
        row["seconds"] = round(time.monotonic() - started, 1)
        folder.append(row)
        took.setdefault(cell.members, []).append(row["seconds"])
        say(f"sweep cell {cell.id}: {row['status']}" + (f" ({row['error']})" if row.get("error") else
            f", time to stable {_seconds(row.get('time_to_stable_ms'))}"))
        write_outputs(folder)
        failures = failures + 1 if row["status"] == "failed" else 0
        if failures >= CONSECUTIVE_FAILURES:
            raise SweepFailed(f"{failures} cells in a row failed (last: {row['error']}); the cluster may be gone. "
                              f"The finished cells are kept in {folder.path}: run the sweep again to resume")


def _seconds(ms) -> str:
    return "none (not settled in the window)" if ms is None else f"{ms / 1000:.1f} s"


def time_left(todo: list[Cell], took: dict[int, list[float]]) -> str:
    """The time the cells left should take, from the cells of the same size measured so far in this sweep."""
    if not took:
        return "time left: not known before the first cell ends"
    every = [s for v in took.values() for s in v]
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    left = sum(mean(took.get(c.members) or every) for c in todo)
    guessed = any(c.members not in took for c in todo)
    return f"about {left / 60:.0f} min left" + (" (larger groups not measured yet: longer)" if guessed else "")


def run_cell(spec: SweepSpec, cell: Cell, cluster, runs_root: Path, spark) -> dict:
    """One cell: run, analyse, measure. Any failure is the row's `error` (status `failed`)."""
    from harness.run import run_scenario
    row = {**cell.to_json(), "status": "failed", "run_dir": None}
    scenario = parse_scenario(unique_names(spec.cell_scenario(cell), secrets.token_hex(3)), f"cell {cell.id}")
    try:
        cluster.reset_faults()
        outcome = run_scenario(scenario, runs_root, cluster=cluster, source=f"sweep:{spec.name}")
        row["run_dir"] = str(outcome.run_dir)
        _delete_topics(cluster, [t.name for t in scenario.topics])
        if outcome.errors:
            row["error"] = f"harness: {outcome.errors[0].splitlines()[0]}"
            return row
        row.update(measure(spec, cell, outcome.run_dir, scenario.topics[0].name, spark))
        row["status"] = "ok" if settled(outcome.to_json()) and row["settled"] else "unsettled"
        if outcome.unsettled:
            row["finding"] = outcome.unsettled[0]
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        row["error"] = one_line(exc)
        say(f"sweep cell {cell.id} failed: {traceback.format_exc(limit=4)}")
    return row


def _delete_topics(cluster, names: list[str]) -> None:
    try:
        cluster.delete_topics(names)
    except Exception as exc:  # measured all the same; the bound is checked per cell, so a leftover is only space
        say(f"the cell's topics could not be deleted ({one_line(exc)}); they stay on the sweep's cluster")


def measure(spec: SweepSpec, cell: Cell, run_dir: Path, topic: str, spark) -> dict:
    """The cell's figures: the analysis's verdict and counts, the trigger's cost and the machine's state in its
    window (history_figures), the latency around it."""
    from analysis import analyze, latency
    summary = analyze(run_dir, spark=spark)
    figures = history_figures(spec, cell, run_dir, topic)
    t0, window_end = figures["trigger_ms"], figures["window_end_ms"]
    lat = latency.delivery_latency(spark, run_dir, {"steady": (t0 - STEADY_S * 1000, t0), "window": (t0, window_end)})
    steady, window = lat["steady"], lat["window"]
    return {**figures, "valid": summary.get("valid"), "lost": summary.get("lost_records"),
            "duplicates": summary.get("duplicate_extra_deliveries"),
            "latency_steady_p99_ms": steady["p99_ms"], "latency_window_p99_ms": window["p99_ms"],
            "latency_window_max_ms": window["max_ms"],
            "latency_rise_p99_ms": None if None in (steady["p99_ms"], window["p99_ms"])
            else round(window["p99_ms"] - steady["p99_ms"], 1)}


def history_figures(spec: SweepSpec, cell: Cell, run_dir: Path, topic: str) -> dict:
    """The figures the run directory gives without Spark: the trigger's cost
    (analysis.rebalance_cost, the coordinator's rounds with it), the brokers' slow controller
    events and the members whose session expired, in the window and the steady state before it (analysis.broker_logs,
    analysis.coordinator_log), and the machine's CPU pressure over the workload (run.json)."""
    import json
    from analysis import broker_logs, coordinator_log, history, rebalance_cost
    from harness.run import WORKLOAD_PHASE
    h = history.build(run_dir)
    fault = h.faults[0]
    window_end = fault.injected_at_ms + round(spec.cell.observe_s * 1000)
    if cell.trigger == "crash" and fault.healed_at_ms is not None:  # its restart is another rebalance
        window_end = min(window_end, fault.healed_at_ms)
    window_end = min(window_end, history.workload_stop(h))
    final = cell.partitions + (cell.members if cell.trigger == "partitions_add" else 0)
    figures = rebalance_cost.cost(h, fault, [(topic, p) for p in range(final)], cell.members, window_end)
    # the machine over all the cell measured: the window and the steady state before it (the latency's baseline)
    since = min(figures["trigger_ms"], fault.injected_at_ms) - STEADY_S * 1000
    figures |= broker_logs.stalls_in(broker_logs.slow_controller_events(run_dir), since, window_end)
    figures["sessions_expired"] = coordinator_log.expired_between(coordinator_log.summary(h), since, window_end)
    run = json.loads((run_dir / "run.json").read_text())
    figures["cpu_pressure_pct"] = (run.get("cpu_pressure_pct") or {}).get(WORKLOAD_PHASE)
    return figures

