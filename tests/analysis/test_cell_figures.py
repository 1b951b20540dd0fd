"""Issue 52 (4): a sweep figure is declared once, by the analysis (analysis/figures/cell.py), and the sweep's columns,
tables and plots follow the declarations."""
from analysis.api import FIGURES, MACHINE, ROW_COLUMNS, TABLE
from harness.sweep import outputs


def test_every_figure_is_a_column_of_a_cells_row_and_every_tabled_one_has_a_head():
    names = [f.name for f in FIGURES]
    assert len(set(names)) == len(names) and set(names) <= set(ROW_COLUMNS)
    assert set(TABLE) <= set(names) and all(f.column for f in FIGURES if f.name in TABLE)
    assert {f.baseline for f in FIGURES if f.baseline} <= set(ROW_COLUMNS) and set(MACHINE) <= set(ROW_COLUMNS)


def test_the_sweep_shows_what_the_declarations_say():
    assert list(outputs.METRICS) == [f.name for f in FIGURES]
    assert outputs.PLOTTED == tuple(f.name for f in FIGURES if f.plotted)
    assert set(outputs.BASELINE) == {f.name for f in FIGURES if f.baseline}
    point = {"client": "c", "partitions_per_member": 4, "trigger": "join", "style": "eager-range", "members": 10,
             "settled": 0, "valid": 0, "cells": 0,
             **{f"{m}_{k}": None for m in outputs.METRICS for k in ("min", "max", "median")},
             **{f"{m}_n": 0 for m in outputs.METRICS}}
    head = outputs.markdown([point]).splitlines()[2]
    assert [f.column for f in FIGURES if f.name in TABLE]
    assert all((f.column in head) == (f.family is None) for f in FIGURES if f.column)
    # a family's figures (the state's) show once a point has them: a stateless sweep's tables stay as they were
    stateful = {**point, **{f"{f.name}_{k}": 1 for f in FIGURES if f.family for k in ("min", "max", "n")}}
    head = outputs.markdown([stateful]).splitlines()[2]
    assert all(f.column in head for f in FIGURES if f.column)
    assert outputs.sweep_metrics(False) == tuple(f.name for f in FIGURES if not f.family)
    assert outputs.sweep_metrics(True) == tuple(outputs.METRICS)
