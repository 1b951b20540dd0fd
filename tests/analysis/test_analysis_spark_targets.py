"""--remote sc://... and --master spark://... on real Spark: a Spark Connect server and a standalone master with
one worker, started from the installed pyspark on free loopback ports, give the summary local[*] gives.

The daemons start together (their JVM start-ups overlap the local analyses) and are stopped, process group and
all, at the end of this module. Switching targets stops the cached session; the module leaves the cached
session local[*] again (the `spark` fixture asks get_session per test, so no test holds a stopped one).
"""
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest

from analysis import analyze, cli
from analysis.engine import spark as S
from analysis_runs import clean_run, known_run
from harness.cluster.containers import free_loopback_port
from kafkanet.waiting import require

SPARK_HOME = Path(pyspark.__file__).parent
READY_TIMEOUT_S = 180
RUNS = {"clean-jsonl": (clean_run, "jsonl"), "clean-parquet": (clean_run, "parquet"),
        "known-jsonl": (known_run, "jsonl"), "known-parquet": (known_run, "parquet")}


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Daemon:
    """A Spark JVM in its own process group (with what it starts: a worker's executors), logging to a file."""

    def __init__(self, name: str, argv: list[str], folder: Path, env: dict):
        self.name, self.log = name, folder / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=folder, start_new_session=True)

    def tail(self, n: int = 30) -> str:
        lines = self.log.read_text(errors="replace").splitlines()
        return "\n".join(f"  {self.name}| {line}" for line in lines[-n:])

    def stop(self) -> None:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:  # the whole group is gone
                break
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):  # executors outliving their worker
            os.killpg(self.proc.pid, signal.SIGKILL)


def wait_until(ready, what: str, *daemons: Daemon) -> None:
    """Until ready(); a daemon that exits fails the test at once (pytest.fail is no Exception: never "not yet")."""
    def ready_and_alive() -> bool:
        if ready():
            return True
        for d in daemons:
            if d.proc.poll() is not None:
                pytest.fail(f"{d.name} exited ({d.proc.returncode}) before {what}:\n{d.tail()}")
        return False

    require(ready_and_alive, READY_TIMEOUT_S, f"no {what}", error=pytest.fail.Exception,
            detail=lambda: "\n".join(d.tail() for d in daemons))


@pytest.fixture(scope="module")
def daemons(tmp_path_factory):
    """Starts the Connect server, the master and the worker without waiting for them; stops them at the end."""
    folder = tmp_path_factory.mktemp("spark-daemons")
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=str(folder),
               PYSPARK_PYTHON=sys.executable)
    quick_jvm = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # start-up and little CPU over peak speed (2 cores)
    daemon_env = dict(env, SPARK_DAEMON_MEMORY="256m", SPARK_DAEMON_JAVA_OPTS=quick_jvm,
                      SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")  # no REST submission port
    ports = {name: free_loopback_port() for name in ("connect", "master", "master_ui", "worker_ui")}
    started: dict[str, Daemon] = {}
    try:
        started["connect"] = Daemon("connect", [
            str(SPARK_HOME / "bin" / "spark-submit"), "--name", "kafka-chaos-test-connect",
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master", "local[2]", "--driver-memory", "1g", "--driver-java-options", quick_jvm,
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={ports['connect']}",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false"], folder, env)
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        started["master"] = Daemon("master", [
            spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(ports["master"]), "--webui-port", str(ports["master_ui"])], folder, daemon_env)
        # started at once too: until the master listens the worker retries registering every few seconds
        started["worker"] = Daemon("worker", [
            spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{ports['master']}",
            "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(ports["worker_ui"]),
            "--work-dir", str(folder / "work")], folder, daemon_env)
        yield started, ports
    finally:
        for d in reversed(list(started.values())):
            d.stop()


@pytest.fixture(scope="module")
def connect_url(daemons):
    started, ports = daemons
    wait_until(lambda: port_open(ports["connect"]), "Spark Connect port", started["connect"])
    return f"sc://127.0.0.1:{ports['connect']}"


@pytest.fixture(scope="module")
def master_url(daemons):
    started, ports = daemons

    def worker_registered():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['master_ui']}/json/", timeout=2) as r:
                return json.load(r).get("aliveworkers", 0) >= 1
        except OSError:
            return False
    wait_until(worker_registered, "worker registered with the master", started["master"], started["worker"])
    return f"spark://127.0.0.1:{ports['master']}"


@pytest.fixture(scope="module", autouse=True)
def local_again():
    yield
    S.get_session()  # stops the Connect / standalone session, starts local[*] again


@pytest.fixture(scope="module")
def runs(tmp_path_factory, daemons):
    """name -> (run dir, local[*] summary, local CLI exit code). Asks for the daemons first: they boot meanwhile."""
    root = tmp_path_factory.mktemp("targets")
    out = {}
    for name, (build, fmt) in RUNS.items():
        rd = build(root / name, fmt).write()
        summary = analyze(rd)
        assert summary["valid"] is name.startswith("clean") and not summary["errors"], summary["checks"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(["analyze", str(rd)])
        out[name] = (rd, summary, code)
    return out


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "analysis_seconds"}


def one_line_error(err: str) -> list[str]:
    return [line for line in err.strip().splitlines() if not line.startswith("[")]


# ------------------------------------------------------------------------------------- nobody answers
def test_unreachable_connect_server_exits_3_in_seconds(tmp_path, spark, capsys):
    rd = clean_run(tmp_path / "run", "jsonl").write()
    held = S._SESSION
    url = f"sc://127.0.0.1:{free_loopback_port()}"  # nothing listens there
    t0 = time.monotonic()
    code = cli.main(["analyze", str(rd), "--remote", url])
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNKNOWN and took < 30, (code, took)
    lines = one_line_error(err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kafka-chaos analyze: cannot reach the Spark Connect server at {url}: ")
    assert lines[0].endswith("Connection refused")
    assert S._SESSION is held and S.is_started()  # the local session was not given up for nothing


def test_unreachable_master_exits_3_at_once(tmp_path, spark, capsys):
    rd = clean_run(tmp_path / "run", "jsonl").write()
    held = S._SESSION
    port = free_loopback_port()
    t0 = time.monotonic()
    code = cli.main(["analyze", str(rd), "--master", f"spark://127.0.0.1:{port}"])
    took = time.monotonic() - t0
    lines = one_line_error(capsys.readouterr().err)
    assert code == cli.EXIT_UNKNOWN and took < 10, (code, took)
    assert lines == [f"kafka-chaos analyze: cannot reach the Spark master spark://127.0.0.1:{port}: "
                     f"127.0.0.1:{port} (Connection refused)"]
    assert S._SESSION is held and S.is_started()


# ------------------------------------------------------------------------------------------ Spark Connect
@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 29 min 32 s of tests on 2026-11-29): standalone in make test, Connect in the nightly
@pytest.mark.parametrize("name", RUNS)
def test_connect_summary_equals_local(runs, connect_url, name):
    rd, local, _ = runs[name]
    got = analyze(rd, remote=connect_url)
    assert type(S.get_session(remote=connect_url)).__module__ == "pyspark.sql.connect.session"
    assert comparable(got) == comparable(local)


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 29 min 32 s of tests on 2026-11-29): standalone in make test, Connect in the nightly
@pytest.mark.parametrize("name", ["clean-jsonl", "known-parquet"])
def test_connect_cli_exit_code_equals_local(runs, connect_url, name, capsys):
    rd, _, local_code = runs[name]
    code = cli.main(["analyze", str(rd), "--remote", connect_url])
    err = capsys.readouterr().err
    assert code == local_code == (0 if name.startswith("clean") else 1), err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------- standalone cluster
# make test's 30 minutes (a fresh clone: 32 min 12 s of tests on 2026-11-30): the standalone cluster, like Connect,
# in the nightly; make test keeps the targets that need no cluster (an unreachable master or server, the properties)
@pytest.mark.slow
@pytest.mark.parametrize("name", RUNS)
def test_standalone_summary_equals_local(runs, master_url, name):
    rd, local, _ = runs[name]
    got = analyze(rd, master=master_url)
    sc = S.get_session(master=master_url).sparkContext
    assert sc.master == master_url and sc.getConf().get("spark.driver.host") == "127.0.0.1"
    assert comparable(got) == comparable(local)


@pytest.mark.slow  # the standalone cluster's, in the nightly (above)
def test_a_cluster_session_runs_on_the_default_jvm_and_a_local_one_on_the_local_jvm(master_url):
    """The gateway JVM is one a process: a session whose JVM differs from the running gateway's restarts it."""
    def major(session) -> int:
        return int(str(session.sparkContext._jvm.System.getProperty("java.specification.version")).split(".")[-1])
    assert major(S.get_session(master=master_url)) == S.java_major(S.default_java())
    assert major(S.get_session()) == S.java_major(S.local_java())


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 30 min 46 s on 2026-11-29): the nightly runs it
def test_standalone_cli_exit_code_equals_local(runs, master_url, capsys):
    rd, _, local_code = runs["known-jsonl"]
    assert cli.main(["analyze", str(rd), "--master", master_url]) == local_code == 1


def test_session_target_includes_the_properties():
    """A session built with other properties (another cluster's driver address) is not reused."""
    assert S._target("spark://h:7077", None, {"spark.driver.host": "a"}) != S._target("spark://h:7077", None, None)
    assert S._target("spark://h:7077", None, {"b": "1", "a": "2"}) == S._target("spark://h:7077", None, {"a": "2", "b": "1"})
    assert S._target(None, "sc://h:1", {"a": "1"}) == S._target(None, "sc://h:1", None)
