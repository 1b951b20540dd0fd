"""Bad input to `analyze --conf / --spark-cluster` and `spark-cluster up` exits 2 with one line, before any Spark
session or container is started (the real cluster: tests/cluster/test_spark_cluster.py)."""
import pytest

from harness import cli
from harness.cluster.spark import SparkCluster


def one_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if not line.startswith("[")]
    assert len(lines) == 1, err
    return lines[0]


def test_conf_needs_key_equals_value(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["analyze", str(tmp_path), "--conf", "executor.memory=4g"])
    assert exit_.value.code == 2
    assert "expected a Spark property KEY=VALUE" in capsys.readouterr().err


def test_conf_is_refused_with_spark_connect(tmp_path, capsys):
    code = cli.main(["analyze", str(tmp_path), "--remote", "sc://127.0.0.1:1", "--conf", "spark.executor.memory=4g"])
    assert code == cli.EXIT_BAD_INPUT
    assert one_line(capsys.readouterr().err).startswith("kafka-chaos analyze: bad input: --conf sets a --master")


@pytest.mark.parametrize("extra, says", [
    (["--spark-cluster", "1", "--master", "spark://127.0.0.1:7077"], "--spark-cluster starts its own master: not with --master or --remote"),
    (["--spark-cluster", "0"], "--spark-cluster 0: at least 1 worker"),
])
def test_spark_cluster_flag_bad_input(tmp_path, capsys, extra, says):
    assert cli.main(["analyze", str(tmp_path), *extra]) == cli.EXIT_BAD_INPUT
    assert one_line(capsys.readouterr().err) == f"kafka-chaos analyze: bad input: {says}"


def test_spark_cluster_flag_needs_the_run_directory(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert cli.main(["analyze", str(missing), "--spark-cluster", "2"]) == cli.EXIT_BAD_INPUT
    assert one_line(capsys.readouterr().err) == f"kafka-chaos analyze: bad input: {missing}: run directory does not exist"


def test_spark_cluster_up_needs_its_mounts(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert cli.main(["spark-cluster", "up", "--mount", str(missing)]) == cli.EXIT_BAD_INPUT
    assert one_line(capsys.readouterr().err) == f"kafka-chaos spark-cluster: bad input: --mount {missing}: no such folder"


def test_a_cluster_needs_a_worker():
    with pytest.raises(ValueError, match="at least one worker"):
        SparkCluster(workers=0)
