"""Issue 40: `kafka-chaos sweep` as a user runs it: killed mid-cell (SIGTERM, as CI's time-out or a user's ^C), it
removes its cluster and keeps every finished cell; run again on the same folder, it resumes with the cell it was
killed in and writes its tables, plots and page; `--refigure` measures a cell that lacks a figure again, without a cluster."""
import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest
import yaml

from harness.cluster.containers import PROJECT_LABEL, RUN_LABEL
from kafkanet.waiting import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # two minutes of cells: the nightly runs it (make test keeps its 30 minutes)
ROOT = Path(__file__).resolve().parents[2]
SWEEP = {"name": "kill-resume", "grid": {"members": [3], "partitions_per_member": [2],
                                         "styles": ["eager-range", "cooperative-sticky"], "triggers": ["join"],
                                         "repeats": 1},
         "cell": {"members_per_host": 3, "rate": 200, "warmup_s": 6, "observe_s": 10}}


def sweep_command(path: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "sweep", str(path), "--out", str(out)]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def containers_left() -> list:
    engine = docker.from_env()
    return [c for c in engine.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}=kafka-chaos"})
            if c.labels.get(RUN_LABEL, "").startswith(f"sweep-{SWEEP['name']}-")]


def test_a_sweep_killed_mid_cell_keeps_its_finished_cells_and_resumes_with_the_killed_one(tmp_path):
    path, out = tmp_path / "sweep.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(SWEEP))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (tmp_path / "first.log").open("w") as log:
        first = subprocess.Popen(sweep_command(path, out), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            def second_cell_running() -> bool:
                runs = sorted((out / "runs").glob("*")) if (out / "runs").exists() else []
                return len(lines(out / "cells.jsonl")) == 1 and len(runs) == 2 and any((runs[1] / "events").glob("*"))
            assert wait_until(second_cell_running, 300), (tmp_path / "first.log").read_text()[-3000:]
            first.send_signal(signal.SIGTERM)
            assert first.wait(180) == 130, (tmp_path / "first.log").read_text()[-3000:]
        finally:
            if first.poll() is None:
                first.kill()
    assert containers_left() == []
    [kept] = lines(out / "cells.jsonl")
    assert json.loads(kept)["status"] == "ok"
    killed_run = sorted((out / "runs").glob("*"))[1]

    again = subprocess.run(sweep_command(path, out), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 cells, 1 finished before, 1 to run" in again.stderr
    first_row, second_row = lines(out / "cells.jsonl")
    assert first_row == kept  # the finished cell was not run again, nor its row touched
    second = json.loads(second_row)
    assert second["cell"] == "librdkafka-3m-2ppm-cooperative-sticky-join-r1" and second["status"] == "ok"
    assert out / second["run_dir"] != killed_run and killed_run.exists()  # the killed cell's run is kept, not used
    assert not Path(second["run_dir"]).is_absolute()  # relative to the sweep's folder: a published row names no machine
    assert second["time_to_stable_ms"] > 0 and second["moved"] >= second["needed"] == 1 and second["valid"] is True
    assert "(2 cells: 2 ok, 0 invalid, 0 unsettled, 0 failed)" in again.stdout
    # issue 51: a join is timed from the new member's start; the latency where it bites, against its own baseline
    assert second["trigger_from"] == "member_start" and second["latency_hit_steady_p99_ms"] is not None, second
    assert len(list(csv.DictReader((out / "cells.csv").open()))) == 2
    assert len(list(csv.DictReader((out / "curve.csv").open()))) == 2
    page = (out / "index.html").read_text()
    assert "librdkafka-2ppm-time_to_stable_ms.png" in page and (out / "librdkafka-2ppm-time_to_stable_ms.png").stat().st_size
    assert containers_left() == []
    assert second["coordinator_rounds"] >= 1 and second["join_phase_ms"] >= 0 and second["assignment_ms"] >= 0, second

    # --refigure: a cell measured before the coordinator's figures existed (its row without them, its run without
    # coordinator.log) is measured again from its run directory, no cluster, and comes out as measured today
    first_run = out / json.loads(first_row)["run_dir"]
    (first_run / "coordinator.log").unlink()
    old = {k: v for k, v in json.loads(first_row).items() if k not in ("coordinator_rounds", "join_phase_ms", "assignment_ms")}
    with (out / "cells.jsonl").open("a") as rows_file:
        rows_file.write(json.dumps(old, sort_keys=True) + "\n")
    refigured = subprocess.run(sweep_command(path, out) + ["--refigure"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=600)
    assert refigured.returncode == 0, refigured.stderr[-3000:]
    assert "1 of 2 finished cells lack a figure" in refigured.stderr
    assert (first_run / "coordinator.log").stat().st_size and containers_left() == []
    rows = [json.loads(line) for line in lines(out / "cells.jsonl")]
    assert len(rows) == 4 and rows[3] == rows[0]  # measured again: the same figures as when it ran
    assert {"sessions_expired", "broker_stalls", "cpu_pressure_pct"} <= rows[0].keys()
    assert rows[0]["sessions_expired"] == 0 and rows[0]["broker_stalls"] == 0, rows[0]  # a join on a calm machine
    assert 0 <= rows[0]["cpu_pressure_pct"] <= 100

    # a row that lacks only what its history gives (a cell measured before the machine's figures) needs no Spark
    older = {k: v for k, v in rows[3].items() if k not in ("sessions_expired", "broker_stalls", "broker_stall_max_ms")}
    with (out / "cells.jsonl").open("a") as rows_file:
        rows_file.write(json.dumps(older, sort_keys=True) + "\n")
    again = subprocess.run(sweep_command(path, out) + ["--refigure"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "1 of 2 finished cells lack a figure" in again.stderr, again.stderr[-3000:]
    assert "measuring 1 again from their histories, without Spark" in again.stderr
    assert json.loads(lines(out / "cells.jsonl")[-1]) == rows[0]
    nothing = subprocess.run(sweep_command(path, tmp_path / "none") + ["--refigure"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    assert nothing.returncode == 2 and "holds no sweep" in nothing.stderr
