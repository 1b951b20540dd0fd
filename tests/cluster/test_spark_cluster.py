"""Issue 23, item 5: the analysis on a Spark standalone cluster in containers (harness/cluster/spark.py) gives the
summary the local session gives, field by field, for synthetic runs with planted anomalies in both formats and in
an unordered layout; the CLI's `--master ... --conf ...` (what `spark-cluster up` prints) and `--spark-cluster N`
exit as the local analysis does, and leave no container behind."""
import contextlib
import io
import json

import pytest

from analysis.api import analyze, cli as analysis_cli
from analysis import api
from benchmarks.synth import Plan, generate
from harness import cli as harness_cli
from harness.cluster.containers import docker_client
from harness.cluster.spark import CLUSTER_LABEL, EXECUTOR_PYTHON, SparkCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PLANS = {"parquet": Plan(records=60_000, partitions=6, fmt="parquet"),
         "jsonl-shuffled": Plan(records=60_000, partitions=6, fmt="jsonl", order="shuffled", files=3)}


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "analysis_seconds"}


def containers_of(cluster_id: str | None = None) -> list:
    label = CLUSTER_LABEL if cluster_id is None else f"{CLUSTER_LABEL}={cluster_id}"
    return docker_client().containers.list(all=True, filters={"label": label})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (run dir, local[*] summary)."""
    root = tmp_path_factory.mktemp("spark-cluster-runs")
    out = {}
    for name, plan in PLANS.items():
        generate(root / name, plan)
        out[name] = (root / name, analyze(root / name, master="local[*]"))
    return root, out


@pytest.fixture(scope="module")
def cluster(runs):
    root, _ = runs
    with SparkCluster(workers=2, memory_mb=2048, mounts=(root,)) as started:
        yield started
    assert containers_of(started.cluster_id) == [], "the cluster's containers outlived it"
    api.get_session()  # the module leaves the cached session local[*] again


@pytest.mark.parametrize("name", PLANS)
def test_summary_on_two_workers_equals_local(runs, cluster, name):
    rd, local = runs[1][name]
    assert local["valid"] is False and local["lost_records"] > 0 and local["anomaly_counts"]["backwards"] > 0
    got = analyze(rd, master=cluster.master_url, conf=cluster.driver_conf())
    sc = api.get_session(master=cluster.master_url, conf=cluster.driver_conf()).sparkContext
    assert sc.master == cluster.master_url and sc.pythonExec == EXECUTOR_PYTHON
    executors = {e.host() for e in sc._jsc.sc().statusTracker().getExecutorInfos()} - {sc.getConf().get("spark.driver.host")}
    assert len(executors) == 2, f"both workers' executors should have joined: {executors}"
    assert comparable(got) == comparable(local)


def test_cli_line_that_spark_cluster_up_prints(runs, cluster, capsys):
    rd, local = runs[1]["parquet"]
    argv = cluster.analyze_command().replace("RUN_DIR", str(rd)).split()[1:]
    assert harness_cli.main(argv) == analysis_cli.EXIT_INVALID, capsys.readouterr().err


def test_analyze_with_its_own_cluster_removes_it(runs, capsys):
    rd, local = runs[1]["jsonl-shuffled"]
    before = {c.labels[CLUSTER_LABEL] for c in containers_of()}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = harness_cli.main(["analyze", str(rd), "--spark-cluster", "1", "--json"])
    assert code == analysis_cli.EXIT_INVALID, capsys.readouterr().err
    assert comparable(json.loads(out.getvalue())) == comparable(json.loads(json.dumps(local, default=str)))
    assert {c.labels[CLUSTER_LABEL] for c in containers_of()} == before, "the analysis's own cluster outlived it"
