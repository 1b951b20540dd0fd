"""`kafka-chaos sweep`: every cell of a sweep file run on one cluster, one row a cell, resumable.

A cell is an ordinary run (harness.run.run_scenario: the same plan, faults, settling rule and run directory), analysed
as any run is, then measured by the analysis (analysis.api.cell_figures) over its trigger's window. Its topics
are deleted once it ends (the brokers' replica bound). A cell's status follows one rule (rebalance_cost.status):
`ok` (settled and valid: only such a cell's figures enter the curve), `invalid` (settled, the run invalid) or
`unsettled`, each a result; one the harness could not finish is `failed` and runs again when the sweep resumes.
"""
from __future__ import annotations

import secrets
import time
import traceback
from pathlib import Path

from harness.progress import one_line, say
from harness.scenario import parse_scenario, unique_names
from harness.sweep.spec import Cell, SweepSpec
from harness.sweep.triggers import TRIGGERS
from harness.sweep.store import SweepDir, utc_now

CONSECUTIVE_FAILURES = 3  # the cluster is likely gone: stop rather than fail every cell left


class SweepFailed(RuntimeError):
    """The sweep stopped before its end (the CLI: exit 3); the finished cells are kept."""


def lanes_for(spec: SweepSpec) -> tuple[str, ...]:
    """Every client lane any cell needs (the cluster is started once, for all of them)."""
    lanes: dict[str, None] = {}
    for cell in spec.cells():
        lanes.update(dict.fromkeys(parse_scenario(spec.cell_scenario(cell), cell.id).client_lanes()))
    return tuple(lanes)


def run_sweep(spec: SweepSpec, source: str, out: Path, rerun: str | None = None) -> list[dict]:
    """Run the cells not finished yet in `out` (all of them for a new folder) on a cluster of the sweep's own, and
    those ``rerun`` names again (SweepDir.stale: a pattern of cell ids, e.g. '*-crash-*'; their new rows replace the
    old, and a rerun cut short resumes with the same pattern); returns every row."""
    folder = SweepDir(out)
    done = folder.open(spec, source)
    again = folder.stale(rerun, [cell.id for cell in spec.cells() if cell.id in done]) if rerun else set()
    todo = [cell for cell in spec.cells() if cell.id not in done or cell.id in again]
    say(f"sweep {spec.name}: {len(spec.cells())} cells, {len(done)} finished before, {len(todo)} to run"
        + (f" ({len(again)} again: {rerun})" if rerun else "") + f"; in {out}")
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
    sweep now gives (outputs.METRICS, outputs.MACHINE), or has one by an older definition (analysis.api.stale): a
    cell measured before the analysis gained or changed it; and every cell the analysis could not judge (unjudged),
    which is analysed again. A cell that ran before coordinator.log existed gets it
    from the brokers' logs its run kept; one whose stale figures are all of its history (none a latency figure) is
    measured without Spark (figures_without_spark). Each cell's new row is appended (the latest row of a cell is its
    row); returns every row."""
    import json
    from analysis.api import MACHINE, SPARK_FIGURES, get_session, stale
    from harness import coordinator_log
    from harness.sweep.outputs import sweep_metrics, write_outputs
    METRICS = sweep_metrics(spec.state is not None)
    folder = SweepDir(out)
    done = folder.open(spec, source)
    cells = {cell.id: cell for cell in spec.cells()}
    needs_spark = lambda row: (unjudged(row)  # noqa: E731
                               or bool(stale(row, [m for m in METRICS if m in SPARK_FIGURES or m not in row])))
    old = [row for row in done.values() if row["cell"] in cells and row["status"] != "failed"
           and (stale(row, (*METRICS, *MACHINE)) or unjudged(row))]
    todo = [row for row in old if folder.run_dir(row) is not None]
    gone = len(old) - len(todo)
    spark = get_session() if any(needs_spark(row) for row in todo) else None
    say(f"sweep {spec.name}: {len(old)} of {len(done)} finished cells lack a figure or have an older one; measuring "
        f"{len(todo)} again"
        + ("" if spark or not todo else " from their histories, without Spark")
        + (f"; {gone} kept as measured: their run directories are gone (a sweep resumed from published rows)"
           if gone else ""))
    for i, row in enumerate(todo):
        run_dir = folder.run_dir(row)
        say(f"sweep refigure {i + 1} of {len(todo)}: {row['cell']}")
        plan = json.loads((run_dir / "plan.json").read_text())
        if not (run_dir / coordinator_log.FILE).exists():
            coordinator_log.write(run_dir, plan["group_id"])
        cell, topic = cells[row["cell"]], plan["topics"][0]["name"]
        try:
            figures = (measure(spec, cell, run_dir, topic, spark) if needs_spark(row)
                       else figures_without_spark(spec, cell, run_dir, topic))
        except Exception as exc:  # the row stays as it was measured
            say(f"sweep cell {row['cell']}: not measured again ({one_line(exc)})")
            continue
        folder.append(judged({**row, **figures}))
    write_outputs(folder)
    return list(folder.finished().values())


def _run_cells(spec: SweepSpec, todo: list[Cell], folder: SweepDir, cluster) -> None:
    from analysis.api import get_session
    from harness.sweep.outputs import write_outputs
    spark = get_session()
    took: dict[int, list[float]] = {}
    failures = 0
    for i, cell in enumerate(todo):
        say(f"sweep cell {i + 1} of {len(todo)}: {cell.id}; {time_left(todo[i:], took)}")
        started = time.monotonic()
        row = run_cell(spec, cell, cluster, folder, spark)
        row["seconds"] = round(time.monotonic() - started, 1)
        row["measured_at"] = utc_now()
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
    return "none (not settled)" if ms is None else f"{ms / 1000:.1f} s"


def time_left(todo: list[Cell], took: dict[int, list[float]]) -> str:
    """The time the cells left should take, from the cells of the same size measured so far in this sweep."""
    if not took:
        return "time left: not known before the first cell ends"
    every = [s for v in took.values() for s in v]
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    left = sum(mean(took.get(c.members) or every) for c in todo)
    guessed = any(c.members not in took for c in todo)
    return f"about {left / 60:.0f} min left" + (" (larger groups not measured yet: longer)" if guessed else "")


def run_cell(spec: SweepSpec, cell: Cell, cluster, folder: SweepDir, spark) -> dict:
    """One cell: run, analyse, measure. Any failure is the row's `error` (status `failed`)."""
    from harness.run import run_scenario
    row = {**cell.to_json(), "status": "failed", "run_dir": None}
    scenario = parse_scenario(unique_names(spec.cell_scenario(cell), secrets.token_hex(3)), f"cell {cell.id}")
    try:
        cluster.reset_faults()
        outcome = run_scenario(scenario, folder.runs, cluster=cluster, source=f"sweep:{spec.name}")
        row["run_dir"] = folder.relative(outcome.run_dir)
        _delete_topics(cluster, [t.name for t in scenario.created_topics()])
        if outcome.errors:
            row["error"] = f"harness: {outcome.errors[0].splitlines()[0]}"
            return row
        row = judged({**row, **measure(spec, cell, outcome.run_dir, scenario.topics[0].name, spark)})
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


def unjudged(row: dict) -> bool:
    """The analysis could not judge the cell's run (a check failed on it: valid "unknown"): a fixed check may now."""
    return row.get("valid") == "unknown"


def judged(row: dict) -> dict:
    """The row with its status by the one rule (analysis.rebalance_cost.status: settled and valid, or not)."""
    from analysis.api import status
    return {**row, "status": status(row.get("settled") is True, row.get("valid"))}


def measure(spec: SweepSpec, cell: Cell, run_dir: Path, topic: str, spark) -> dict:
    """The cell's figures, as the analysis gives them (analysis.api.cell_figures) over its trigger's window."""
    from analysis.api import cell_figures
    return cell_figures(run_dir, covered(cell, topic), cell.members, round(spec.cell.observe_s * 1000), spark)


def figures_without_spark(spec: SweepSpec, cell: Cell, run_dir: Path, topic: str) -> dict:
    """The cell's figures that its history gives (analysis.api.history_figures), with no Spark."""
    from analysis.api import history_figures
    return history_figures(run_dir, covered(cell, topic), cell.members, round(spec.cell.observe_s * 1000))[0]


def covered(cell: Cell, topic: str) -> list[tuple[str, int]]:
    """Every partition a cell's figures cover: the topic's, and those its trigger adds."""
    return [(topic, p) for p in range(cell.partitions + TRIGGERS[cell.trigger].new_partitions(cell))]
