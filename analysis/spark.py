"""One SparkSession per process, reused by every analysis (a pytest session pays JVM start-up once)."""
from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path

_LOCK = threading.Lock()
_SESSION = None
_TARGET: tuple[str | None, str | None] | None = None  # (master, remote) the cached session was built for

LOG4J = Path(__file__).with_name("log4j2.properties")

# Settings the analysis relies on; applied to every session it uses, also one passed in by the caller.
RUNTIME_CONF = {
    "spark.sql.ansi.enabled": "false",  # bit arithmetic on 64-bit masks wraps by design
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}


class SparkUnavailable(RuntimeError):
    """No Spark session could be had (missing Spark Connect client extras, unreachable master, no Java)."""


def _quiet_python_warnings() -> None:
    # pyspark 4.3 warns that pandas 3 is "not fully supported"; the analysis does not go through pandas.
    warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support pandas.*")


def _alive(session) -> bool:
    try:
        jsc = getattr(session.sparkContext, "_jsc", None)
        return jsc is not None and not jsc.sc().isStopped()
    except Exception:  # Spark Connect sessions have no sparkContext
        try:
            session.range(1).collect()
            return True
        except Exception:
            return False


def get_session(master: str | None = None, remote: str | None = None):
    """The process's SparkSession for analysis, created on first use.

    ``master``: any Spark master URL (default ``local[*]``); ``remote``: a Spark Connect URL ``sc://host:port``
    (needs pyspark's connect extras: grpcio, grpcio-status, googleapis-common-protos, zstandard).
    A call with a different master/remote than the cached session stops it and builds a new one.
    """
    global _SESSION, _TARGET
    _quiet_python_warnings()
    target = (None, remote) if remote else (master or "local[*]", None)
    with _LOCK:
        if _SESSION is not None and _TARGET == target and _alive(_SESSION):
            return _SESSION
        if _SESSION is not None:
            try:
                _SESSION.stop()
            except Exception:
                pass
            _SESSION = None
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        if remote:
            try:
                session = SparkSession.builder.remote(remote).getOrCreate()
            except ImportError as exc:  # the connect extras are not installed
                raise SparkUnavailable(f"Spark Connect needs pyspark's connect extras ({exc}); "
                                   "install grpcio, grpcio-status, googleapis-common-protos and zstandard") from exc
        else:
            m = target[0]
            builder = (SparkSession.builder.master(m).appName("kafka-chaos-analysis")
                       .config("spark.ui.enabled", "false")
                       .config("spark.ui.showConsoleProgress", "false")
                       .config("spark.sql.shuffle.partitions", "8")
                       .config("spark.driver.memory", os.environ.get("KAFKA_CHAOS_SPARK_DRIVER_MEMORY", "4g")))
            if LOG4J.is_file():  # shipped next to this module (package data)
                builder = (builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J}")
                           .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J}"))
            if m.startswith("local"):
                builder = (builder.config("spark.driver.host", "127.0.0.1")
                           .config("spark.driver.bindAddress", "127.0.0.1"))
            for key, value in RUNTIME_CONF.items():
                builder = builder.config(key, value)
            try:
                session = builder.getOrCreate()
            except Exception as exc:
                raise SparkUnavailable(f"cannot start Spark ({m}): {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc
            session.sparkContext.setLogLevel("ERROR")
        apply_runtime_conf(session)
        _SESSION, _TARGET = session, target
        return session


def is_started(master: str | None = None, remote: str | None = None) -> bool:
    """Whether get_session(master, remote) would return an existing session (no JVM start-up)."""
    target = (None, remote) if remote else (master or "local[*]", None)
    return _SESSION is not None and _TARGET == target and _alive(_SESSION)


def apply_runtime_conf(session) -> None:
    for key, value in RUNTIME_CONF.items():
        try:
            session.conf.set(key, value)
        except Exception:
            pass


def default_parallelism(session) -> int:
    try:
        return max(1, session.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect
        return 4


def stop_session() -> None:
    """Stop the cached session (tests and scripts that want the JVM gone)."""
    global _SESSION, _TARGET
    with _LOCK:
        if _SESSION is not None:
            try:
                _SESSION.stop()
            finally:
                _SESSION, _TARGET = None, None
