"""Issue 53 (7): a command member that cannot start, on a real cluster. Each stops the run with one line naming the
member's field, its command and its log (ScenarioError: `kafka-chaos run` exits 2), in run.json's errors; the other
members are stopped and every member's log is kept. The planted bugs of examples/python (slow) are caught."""
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.scenario import ScenarioError

pytestmark = pytest.mark.cluster
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHORT = {"producer": {"records": 1000, "rate": 1000}}

# A program of the user's that makes its consumer with its own client.id (not through workloads/app.py).
OWN_CLIENT_ID = """
import os, signal
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": os.environ["KAFKA_CHAOS_BOOTSTRAP_SERVERS"], "group.id": os.environ["KAFKA_CHAOS_GROUP_ID"],
              "client.id": "app-" + os.environ["KAFKA_CHAOS_MEMBER"].split("-")[1], "auto.offset.reset": "earliest"})
c.subscribe(os.environ["KAFKA_CHAOS_TOPICS"].split(","))
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
while not stop:
    c.poll(0.5)
c.close()
"""


def refused(chaos_run, scenario: dict, request, tmp_path) -> tuple[str, Path]:
    """The line a refused run ends on, and its run directory (chaos_run's: under --keep-runs, or tmp_path/runs)."""
    with pytest.raises(ScenarioError) as err:
        chaos_run(scenario)
    keep = request.config.getoption("keep_runs")
    [run_dir] = list((keep / re.sub(r"[^\w.-]+", "_", request.node.name) if keep else tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "run.json").read_text())["errors"] == [str(err.value)]
    return str(err.value), run_dir


def command_group(command, count=2, **fields) -> dict:
    return {**SHORT, "consumer_group": {"members": [{"count": count, "command": command, **fields}]}}


def test_a_program_that_exits_before_it_started_stops_the_run(chaos_run, request, tmp_path):
    line, run_dir = refused(chaos_run, command_group(["{python}", "-c", "print('bye'); raise SystemExit(4)"]), request,
                            tmp_path)
    assert "consumer_group.members[0].command: {python} -c" in line, line
    assert "member-1 exited with 4 before it logged `started`; see logs/member-1.log" in line, line
    assert "bye" in (run_dir / "logs" / "member-1.log").read_text()
    assert (run_dir / "logs" / "member-2.log").exists()
    assert not (run_dir / "report" / "summary.json").exists()  # nothing analysed


def test_a_program_that_never_logs_started_stops_the_run_at_its_time_out(chaos_run, request, tmp_path):
    line, _ = refused(chaos_run, command_group(["{python}", "-c", "import time; time.sleep(60)"], count=1,
                                               start_timeout_s=5), request, tmp_path)
    assert "member-1 logged no `started` within 5 s (start_timeout_s); see logs/member-1.log" in line, line


def test_a_client_id_that_names_no_member_stops_the_run(chaos_run, request, tmp_path):
    program = tmp_path / "own_client_id.py"
    program.write_text(OWN_CLIENT_ID)
    scenario = {**command_group(["{python}", str(program)]), "consumer_group": {
        "members": [{"count": 2, "command": ["{python}", str(program)]}], "output": {"topic": "out"}}}
    line, _ = refused(chaos_run, scenario, request, tmp_path)
    assert "consumer_group.members[0].command: client.id app-1 names no member: set it to {member}" in line, line


@pytest.mark.slow
@pytest.mark.parametrize("app", ["python", "java"])
@pytest.mark.parametrize("bug, mode", [("commit-first", "scenario"), ("commit-first", "output"),
                                       ("seek-past", "scenario"), ("seek-past", "output")])
def test_the_examples_planted_bugs_are_caught(chaos_run, tmp_path, app, bug, mode):
    """commit-first holds committed, unprocessed records a crash loses; seek-past skips a record at each hand-over."""
    example = EXAMPLES / app
    for name in ("app.py", "pom.xml", f"{mode}.yaml"):
        if (example / name).exists():
            shutil.copy(example / name, tmp_path / name)
    if (example / "src").exists():
        shutil.copytree(example / "src", tmp_path / "src")
    scenario = yaml.safe_load((tmp_path / f"{mode}.yaml").read_text())
    [entry] = scenario["consumer_group"]["members"]
    entry["command"] = entry["command"] + ["--bug", bug]
    # the crash after the group is stable again from the coordinator's freeze (members 1 to 3 each own partitions)
    [crash] = [f for f in scenario["faults"] if f["kind"] == "member_crash"]
    crash["at_s"] = 32
    (tmp_path / f"{mode}.yaml").write_text(yaml.safe_dump(scenario))
    summary = chaos_run(tmp_path / f"{mode}.yaml").summary
    assert summary["lost_records"] >= 1, summary["anomaly_counts"]
    if mode == "scenario":
        counts = summary["anomaly_counts"]
        assert counts["commit_ahead"] >= 1 and counts["lost_within_budget"] == 0, counts
        lost = [a for a in summary.get("anomalies", []) if a["type"] == "lost"]
        if bug == "commit-first":
            assert any("member-2" in a["members"] for a in lost), lost
