"""Issue 52 (2): a check is one module. It declares what it reads of the record-level pass and what it asks Spark,
the framework refuses a name that is neither, each check module reads no more than its checks declare, and a check
registered from a test module runs in a real analysis and appears in the summary, anomalies.jsonl and the report."""
import ast
import json
import re
from pathlib import Path

import pytest

from analysis import analyze
from analysis.checks import REGISTRY
from analysis.checks.framework import QUERIES, READ_BACKS, CheckResult, check
from analysis.engine.kernels import RECORD_OUTPUTS
from analysis_runs import T0, clean_run

CHECKS = Path(__file__).resolve().parents[2] / "analysis" / "checks"
# what a module's code reads of the pass, as it spells it
READS = (re.compile(r'x\.got(?:\.get\(|\[)"(\w+)"'), re.compile(r"\bx\.(rows|steps)\b"))
ASKS = re.compile(r'x\.query\("(\w+)"')
THROUGH = {r"x\.duplicates\(\)": {"groups", "rows"}, r"side_totals\(x\.got\)": {"sides"}}


def used(module: Path) -> tuple[set[str], set[str]]:
    text = module.read_text()
    reads = {m for pattern in READS for m in pattern.findall(text)}
    reads |= {r for pattern, names in THROUGH.items() if re.search(pattern, text) for r in names}
    return reads, set(ASKS.findall(text))


def declared(module: Path) -> tuple[set[str], set[str]]:
    names = {node.args[0].value for node in ast.walk(ast.parse(module.read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check" and node.args}
    return ({r for n in names for r in REGISTRY[n].reads}, {q for n in names for q in REGISTRY[n].asks})


@pytest.mark.parametrize("module", sorted(p for p in CHECKS.glob("*.py") if "@check(" in p.read_text()),
                         ids=lambda p: p.name)
def test_a_check_module_reads_and_asks_no_more_than_its_checks_declare(module):
    (reads, asks), (may_read, may_ask) = used(module), declared(module)
    assert reads <= may_read, f"{module.name} reads {sorted(reads - may_read)} that no check of it declares"
    assert asks <= may_ask, f"{module.name} asks {sorted(asks - may_ask)} that no check of it declares"


def test_the_declaration_check_sees_an_undeclared_read(tmp_path):
    module = tmp_path / "x.py"
    module.write_text('def f(x):\n    return x.got.get("spans", []), x.query("copies", 1), x.steps\n')
    assert used(module) == ({"spans", "steps"}, {"copies"})


def test_a_read_that_the_pass_does_not_make_is_refused_when_the_check_is_defined():
    with pytest.raises(ValueError, match="check nope: 'lag' is no output of the record-level pass"):
        check("nope", reads=("lag",), unit="u", color="#000000")
    with pytest.raises(ValueError, match="check nope: 'lag' is no output"):
        check("nope", asks=("lag",), unit="u", color="#000000")


def test_the_questions_a_check_may_ask_are_those_the_analysis_answers():
    job = ast.parse((CHECKS.parent / "job.py").read_text())
    answered = {k.value for node in ast.walk(job) if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "queries" for t in node.targets) for k in node.value.keys}
    assert answered == set(QUERIES) and set(READ_BACKS).isdisjoint(RECORD_OUTPUTS)


@pytest.fixture
def planted_check():
    """A check of this test module's own: every partition the run consumed, one anomaly each."""
    @check("every_partition_seen", reads=("stats",), invalidates=False, unit="partitions consumed (a test's check)",
           color="#123456")
    def every_partition(x):
        rows = [{"type": "every_partition_seen", "topic": r["topic"], "partition": r["partition"], "offsets": [0, 0],
                 "count": 1, "members": [], "generations": [], "time_ms": [T0, T0]} for r in x.got.get("stats", [])]
        return CheckResult(rows, len(rows), {})
    yield
    del REGISTRY["every_partition_seen"]


def test_a_check_registered_from_a_test_module_runs_and_is_reported(planted_check, spark, tmp_path):
    rd = clean_run(tmp_path / "r", "jsonl").write()
    summary = analyze(rd, spark=spark)
    assert summary["checks"]["every_partition_seen"]["count"] == 2
    assert summary["anomaly_counts"]["every_partition_seen"] == 2 and summary["valid"] is True
    rows = [json.loads(line) for line in (rd / "report" / "anomalies.jsonl").read_text().splitlines()]
    assert sorted((r["topic"], r["partition"]) for r in rows if r["type"] == "every_partition_seen") == [("t", 0), ("t", 1)]
    assert "every_partition_seen" in (rd / "report" / "index.html").read_text()
