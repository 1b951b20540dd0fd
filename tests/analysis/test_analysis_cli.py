"""The analyze / compare commands: exit codes, progress lines, the summary printed, python -m analysis."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from analysis import cli
from analysis_runs import clean_run, known_run

ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_run_exits_0_and_prints_summary(tmp_path, spark, capsys):
    rd = clean_run(tmp_path / "run", "jsonl").write()
    code, out, err = run_cli(["analyze", str(rd)], capsys)
    assert code == 0
    assert "verdict: VALID" in out and f"report: {rd.resolve() / 'report' / 'index.html'}" in out
    for phase in ("loading", "scanning", "checks", "report", "done"):
        assert f"] {phase}" in err, err
    assert err.splitlines()[0].startswith("[") and "s] loading" in err.splitlines()[0]


def test_invalid_run_exits_1(tmp_path, spark, capsys):
    rd = known_run(tmp_path / "run", "parquet").write()
    code, out, err = run_cli([str(rd), "--json"], capsys)   # python -m analysis RUN_DIR form
    assert code == 1
    assert json.loads(out)["lost_records"] == 3


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    rd = tmp_path / "run"
    (rd / "produced").mkdir(parents=True)
    code, out, err = run_cli(["analyze", str(rd)], capsys)
    assert code == 2
    assert err.strip().splitlines() == [l for l in err.strip().splitlines() if l.startswith("[")] + \
        ["kafka-chaos analyze: bad input: produced/: no *.parquet or *.jsonl files"]


def test_unknown_exits_3(tmp_path, spark, capsys, monkeypatch):
    import dataclasses

    import analysis.checks.framework as C
    monkeypatch.setitem(C.REGISTRY, "commit_regression", dataclasses.replace(C.REGISTRY["commit_regression"], run=lambda x: 1 / 0))
    rd = clean_run(tmp_path / "run", "jsonl").write()
    code, out, err = run_cli(["analyze", str(rd)], capsys)
    assert code == 3 and "verdict: UNKNOWN" in out and "commit_regression (ZeroDivisionError" in out


def test_add_parser_registers_on_a_host_cli():
    """The kafka-chaos CLI (harness/cli/) registers the commands through add_parser."""
    parser = argparse.ArgumentParser(prog="kafka-chaos")
    sub = parser.add_subparsers(dest="command")
    cli.add_parser(sub)
    args = parser.parse_args(["analyze", "runs/x", "--master", "spark://h:7077", "--grace-ms", "5"])
    assert args.handler is cli.cmd_analyze and args.master == "spark://h:7077" and args.grace_ms == 5
    args = parser.parse_args(["compare", "runs/a", "runs/b"])
    assert args.handler is cli.cmd_compare and [str(p) for p in args.runs] == ["runs/a", "runs/b"]
    help_text = sub.choices["analyze"].format_help()
    assert "exit codes" in help_text and "1  invalid" in help_text and "2  bad input" in help_text


def test_python_m_analysis_standalone(tmp_path):
    """No JVM needed to reject bad input or to print help."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    help_ = subprocess.run([sys.executable, "-m", "analysis", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert help_.returncode == 0 and "exit codes" in help_.stdout
    bad = subprocess.run([sys.executable, "-m", "analysis", str(tmp_path / "missing")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_compare(tmp_path, spark, capsys):
    a = clean_run(tmp_path / "range", "jsonl")
    rd_a = a.write()
    (rd_a / "scenario.yaml").write_text("group:\n  assignor: range\n  protocol: classic\n")
    rd_b = known_run(tmp_path / "sticky", "jsonl").write()
    (rd_b / "scenario.yaml").write_text("group:\n  assignor: cooperative-sticky\n")
    from analysis import analyze
    analyze(rd_a, spark=spark)  # rd_b has no summary yet: compare analyses it
    out_dir = tmp_path / "cmp"
    code, out, err = run_cli(["compare", str(rd_a), str(rd_b), "--out", str(out_dir)], capsys)
    assert code == 1  # one run is invalid
    table = json.loads((out_dir / "compare.json").read_text())
    rows = {r["run"]: r for r in table["runs"]}
    assert rows["range"]["config"] == "assignor=range protocol=classic" and rows["range"]["valid"] is True
    assert rows["sticky"]["lost_records"] == 3 and rows["sticky"]["duplicated_offsets"] == 8
    assert "| range | assignor=range protocol=classic | valid |" in out
    assert (out_dir / "compare.md").read_text().startswith("| run |")
