"""Issue 51: a sweep's folder keeps its rows' run directories relative to itself, says when one is gone, and reruns
the cells a pattern names once each, resuming a rerun cut short."""
import json

from harness.sweep.store import SweepDir


def folder_with(tmp_path, rows) -> SweepDir:
    out = tmp_path / "sweep"
    (out / "runs").mkdir(parents=True)
    (out / "sweep.json").write_text(json.dumps({"name": "x"}))
    (out / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return SweepDir(out)


def test_a_run_directory_is_kept_relative_and_one_that_is_gone_is_none(tmp_path):
    folder = folder_with(tmp_path, [])
    (folder.runs / "cell-a").mkdir()
    assert folder.relative(folder.runs / "cell-a") == "runs/cell-a"
    assert folder.run_dir({"run_dir": "runs/cell-a"}) == folder.runs / "cell-a"
    assert folder.run_dir({"run_dir": "runs/cell-b"}) is None  # a row adopted from a page: its run stayed behind
    assert folder.run_dir({"run_dir": str(folder.runs / "cell-a")}) == folder.runs / "cell-a"  # an older, absolute one


def test_a_rerun_runs_each_named_cell_once_and_resumes_where_it_stopped(tmp_path):
    folder = folder_with(tmp_path, [{"cell": "x-crash-r1", "status": "ok"}, {"cell": "x-crash-r2", "status": "ok"},
                                    {"cell": "x-join-r1", "status": "ok"}])
    cells = ["x-crash-r1", "x-crash-r2", "x-join-r1"]
    assert folder.stale("*-crash-*", cells) == {"x-crash-r1", "x-crash-r2"}
    since = folder.meta()["reruns"]["*-crash-*"]
    folder.append({"cell": "x-crash-r1", "status": "ok", "measured_at": since})  # rerun, then the sweep was cut short
    assert folder.stale("*-crash-*", cells) == {"x-crash-r2"}
    assert folder.meta()["reruns"]["*-crash-*"] == since
