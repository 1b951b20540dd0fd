"""Commits in flight at a freeze or a crash, on real runs (issue 37): what the analysis reports.

Runs scenarios/commit-in-flight-{freeze,crash}.yaml with member-1 on each client, REPEAT times each (each run starts
its own cluster: one at a time), and prints one JSON line a run: its exit code, the anomaly counts, lost and unseen
records, the commits member-1 had in flight when it was stopped or killed, and what `commit_ahead` left unreported
as ambiguous. With ``--old PYTHONPATH`` each run is also analysed by another checkout of the analysis (e.g. a
`git worktree` of a commit before issue 37), for the false findings the commit windows remove.

    .venv/bin/python -m benchmarks.commit_windows --repeat 5 --runs-dir /tmp/commit-windows
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("freeze:java", "freeze:librdkafka", "crash:java", "crash:librdkafka")


def rows(folder: Path, name: str = "*.jsonl") -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob(name)) for line in path.read_text().splitlines() if line]


def commits_sent(run_dir: Path, member: str) -> list[tuple[dict, dict | None]]:
    """Each ``commit_sent`` of ``member`` with its answer (``committed`` or ``commit_failed`` with the same commit_id,
    from the same process: the ids start again after each ``started``), or None when it was never answered."""
    out: list[list] = []
    open_by_id: dict[int, int] = {}
    for e in rows(run_dir / "events", f"{member}.jsonl"):
        if e["kind"] == "started":
            open_by_id.clear()
        elif e["kind"] == "commit_sent":
            open_by_id[e["commit_id"]] = len(out)
            out.append([e, None])
        elif e["kind"] in ("committed", "commit_failed") and e.get("commit_id") in open_by_id:
            out[open_by_id.pop(e["commit_id"])][1] = e
    return [(sent, answer) for sent, answer in out]


def in_flight_at(run_dir: Path, member: str, t: int) -> list[tuple[dict, dict | None]]:
    """The commits ``member`` had sent by ``t`` and had no answer for by then: (its commit_sent, its answer or None)."""
    return [(sent, answer) for sent, answer in commits_sent(run_dir, member)
            if sent["ts_ms"] <= t and (answer is None or answer["ts_ms"] > t)]


def one_run(variant: str, runs_dir: Path) -> dict:
    fault, client = variant.split(":")
    scenario = yaml.safe_load((ROOT / "scenarios" / f"commit-in-flight-{fault}.yaml").read_text())
    scenario["consumer_group"]["members"][0]["client"] = client
    folder = runs_dir / f"{fault}-{client}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--runs-dir", str(folder)], cwd=ROOT,
                          capture_output=True, text=True)
    run_dir = next((Path(line.split(": ", 1)[1]) for line in done.stdout.splitlines() if line.startswith("run directory: ")), None)
    out: dict = {"variant": variant, "exit": done.returncode, "run_dir": str(run_dir)}
    if run_dir is None or not (run_dir / "report" / "summary.json").exists():
        return {**out, "stderr": done.stderr.strip().splitlines()[-3:]}
    s = json.loads((run_dir / "report" / "summary.json").read_text())
    stopped = next(f for f in rows(run_dir, "faults.jsonl") if f["kind"] in ("member_freeze", "member_crash"))
    in_flight = in_flight_at(run_dir, "member-1", stopped["injected_at_ms"])
    ahead = s["checks"]["commit_ahead"]
    return {**out, "counts": {k: v for k, v in s["anomaly_counts"].items() if v}, "lost": s["lost_records"],
            "unseen": s.get("unseen_records"), "in_flight": [sent["commit_id"] for sent, _ in in_flight],
            "ambiguous": ahead.get("ambiguous"), "indeterminate_commits": ahead.get("indeterminate_commits")}


def old_reading(run_dir: str, old: str) -> dict:
    """The run analysed by the analysis at ``old`` (a PYTHONPATH), on a copy without its report."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "run"
        shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("report"))
        done = subprocess.run([sys.executable, "-m", "harness.cli", "analyze", str(copy), "--json"], cwd=old,
                              env={**os.environ, "PYTHONPATH": old, "KAFKA_CHAOS_ANALYSIS_SERVICE": "0"},
                              capture_output=True, text=True)
        s = json.loads(done.stdout)
    return {"old_commit_ahead": s["anomaly_counts"]["commit_ahead"], "old_lost": s["lost_records"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs-dir", type=Path, default=Path("/tmp/commit-windows"))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--old", help="PYTHONPATH of another checkout whose analysis reads each run too")
    args = ap.parse_args(argv)
    for _ in range(args.repeat):
        for variant in args.variants:
            row = one_run(variant, args.runs_dir)
            if args.old and "counts" in row:
                row.update(old_reading(row["run_dir"], args.old))
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
