"""Scenarios an hour in one pytest session (issue 13): `python -m benchmarks.scenarios_per_hour [--scenarios 10]`.

Writes a user's test file that runs the default scenario (scenarios/default.yaml: 100k records at 5,000/s, 3
members, the coordinator frozen for 12 s) through the `chaos_run` fixture N times, runs pytest on it as a user
would (the plugin's session cluster, the analysis in the session's warm Spark), and prints each scenario's seconds
and the rate: scenarios an hour once the session cluster is up, and with its start-up counted. Writes
benchmarks/results/scenarios-per-hour.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

TEST_FILE = '''
import json, time
from pathlib import Path
import pytest, yaml

SCENARIO = yaml.safe_load(Path({scenario!r}).read_text())
TIMES = Path({times!r})

@pytest.mark.parametrize("n", range({count}))
def test_default_scenario(chaos_run, kafka_cluster, n):
    started = time.monotonic()
    run = chaos_run(SCENARIO)
    with TIMES.open("a") as out:
        out.write(json.dumps({{"n": n, "seconds": time.monotonic() - started, "valid": run.summary["valid"],
                              "lost": run.summary["lost_records"]}}) + "\\n")
    run.assert_no_loss()
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=10)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "default.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scenarios-per-hour.json")
    a = ap.parse_args(argv)
    yaml.safe_load(a.scenario.read_text())  # a broken file fails here, not in every test
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-rate-") as tmp:
        times = Path(tmp) / "times.jsonl"
        (Path(tmp) / "test_rate.py").write_text(TEST_FILE.format(scenario=str(a.scenario.resolve()), times=str(times),
                                                                 count=a.scenarios))
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(tmp) / "test_rate.py")],
                              cwd=tmp)
        session = time.monotonic() - started
        runs = [json.loads(line) for line in times.read_text().splitlines()] if times.exists() else []
    if not runs:
        print("no scenario finished", file=sys.stderr)
        return 1
    seconds = [r["seconds"] for r in runs]
    steady = 3600 / statistics.mean(seconds)
    overall = 3600 * len(runs) / session
    print(f"{len(runs)} scenarios: {statistics.median(seconds):.1f} s each (median; {min(seconds):.1f}-{max(seconds):.1f})")
    print(f"rate on the running session cluster: {steady:.0f} scenarios an hour")
    print(f"rate with the session's start-up and end counted ({session:.0f} s in all): {overall:.0f} scenarios an hour")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"runs": runs, "session_s": session, "per_hour_steady": steady, "per_hour_overall": overall,
                                 "pytest_exit": done.returncode}, indent=2) + "\n")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
