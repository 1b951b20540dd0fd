"""One SparkSession per process, reused by every analysis (a pytest session pays JVM start-up once)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import sys
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple


_LOCK = threading.Lock()
_SESSION = None
_TARGET: tuple | None = None  # (master, remote, conf items) the cached session was built for

LOG4J = Path(__file__).with_name("log4j2.properties")

# Settings the analysis relies on; applied to every session it uses, also one passed in by the caller.
RUNTIME_CONF = {
    "spark.sql.ansi.enabled": "false",  # bit arithmetic on 64-bit masks wraps by design
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}

# pyspark.sql.functions build Spark Connect columns while this is set (pyspark.sql.utils.is_remote)
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


class SparkUnavailable(RuntimeError):
    """No Spark session could be had (missing Spark Connect client extras, unreachable master, no Java)."""


# The class-data archive (analysis/jvm_archive.py builds it): where the driver JVM finds it.
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-chaos" / "spark-cds"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # an unusable archive would print a warning on stdout
QUIET_AOT = "-Xlog:aot=off -Xlog:cds=off"
DUMP_ENV = "KAFKA_CHAOS_SPARK_CDS_DUMP"            # set for the child process that builds the archive


# The throughput collector: an analysis is a burst of short tasks that allocate little, where G1's barriers
# cost more than its pauses save (measured: about 3 % of a 10M-record analysis; docs/benchmarks-history.md, issue 8).
GC = "-XX:+UseParallelGC"

# The JVM of a local analysis: the newest JDK of at least AOT_MAJOR in the machine's JVM folder, else the default one
# (JAVA_HOME, then PATH); JAVA_ENV names one outright. From JDK 25 the archive is an AOT cache (JEPs 483, 514, 515:
# Spark's classes loaded and linked, with their method profiles), and a 10M-record analysis takes 6-11 % less, the
# first included (docs/benchmarks-history.md, twelfth increment). Spark runs on Java 17, 21 and 25. A session on a
# cluster keeps the default JVM, the one its executors are most likely to share.
JVM_DIR = Path("/usr/lib/jvm")
JAVA_ENV = "KAFKA_CHAOS_ANALYSIS_JAVA_HOME"
AOT_MAJOR = 25


def _java_in(home) -> Path | None:
    java = Path(home) / "bin" / "java"
    return java.resolve() if java.is_file() else None


def default_java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    java = _java_in(home) if home else shutil.which("java")
    return Path(java).resolve() if java and Path(java).exists() else None


def java_major(java: Path) -> int:
    """The feature release of the JDK ``java`` belongs to (its home's release file; 0 when it says nothing)."""
    for home in (java.parent.parent, java.parent.parent.parent):  # a JDK's bin/java, or a JRE's inside it
        release = home / "release"
        if release.is_file():
            found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', release.read_text(errors="replace"), re.MULTILINE)
            return int(found.group(1)) if found else 0
    return 0


def local_java() -> Path | None:
    """The JVM a local session runs on (see JVM_DIR): named by JAVA_ENV, else the newest JDK >= AOT_MAJOR, else the default."""
    named = os.environ.get(JAVA_ENV)
    if named:
        return _java_in(named)
    found = [j for j in map(_java_in, sorted(JVM_DIR.glob("*"))) if j is not None and has_aot_cache(j)]
    return max(found, key=java_major, default=None) or default_java()


def has_aot_cache(java: Path | None) -> bool:
    """Whether ``java``'s archive is an AOT cache (JDK AOT_MAJOR on), not a dynamic CDS archive."""
    return java is not None and java_major(java) >= AOT_MAJOR


def driver_java(master: str) -> Path | None:
    return local_java() if master.startswith("local") else default_java()


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]


def archive_path(java: Path | None = None) -> Path | None:
    """Where the archive for this JVM (default: the local one) and these Spark jars lives (None without a JVM): an
    AOT cache (.aot) from JDK AOT_MAJOR on, a dynamic CDS archive (.jsa) before. The jars' folder is part of the
    name: an archive only serves the class path it was built with (one per venv)."""
    import pyspark
    java = java or local_java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    st = java.stat()
    build = [str(java), st.st_size, st.st_mtime_ns, pyspark.__version__, sorted(p.name for p in jars.glob("*.jar")), GC]
    suffix = ".aot" if has_aot_cache(java) else ".jsa"
    return CACHE / f"spark-{_digest(str(jars))}-{_digest(build)}{suffix}"


def java_options(java: Path | None = None) -> str:
    """Options for the driver JVM ``java`` (default: the local one): use its archive if there is one (or write it,
    in the building child)."""
    java = java or local_java()
    aot = has_aot_cache(java)
    if os.environ.get(DUMP_ENV):
        dump = os.environ[DUMP_ENV]
        return f"{GC} -XX:AOTCacheOutput={dump} {QUIET_AOT}" if aot else f"{GC} -XX:ArchiveClassesAtExit={dump} {QUIET}"
    path = archive_path(java)
    if path is None or not path.is_file():
        return GC
    return f"{GC} -XX:AOTCache={path} {QUIET_AOT}" if aot else f"{GC} -XX:SharedArchiveFile={path} {QUIET}"


def _quiet_python_warnings() -> None:
    # pyspark 4.3 warns that pandas 3 is "not fully supported"; the analysis does not go through pandas.
    warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support pandas.*")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_connect(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def _few_retries(session, retries: int) -> None:
    """Spark Connect retries an unreachable server for ~10 minutes by default; give up within seconds."""
    from pyspark.sql.connect.client.retries import DefaultPolicy
    session.client.set_retry_policies([DefaultPolicy(max_retries=retries, initial_backoff=200, max_backoff=1000)])


def _probe(session) -> str | None:
    """None if the Spark Connect server answers a trivial query within a few seconds, else why not."""
    policies = session.client.get_retry_policies()
    _few_retries(session, 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # [RETRIES_EXCEEDED]
            session.range(1).collect()
        return None
    except Exception as exc:
        details = re.search(r'details = "([^"]*)"', str(exc))  # gRPC errors are multi-line
        return details.group(1) if details else _first_line(exc)
    finally:
        session.client.set_retry_policies(policies)


def _alive(session) -> bool:
    if _is_connect(session):
        return not session.is_stopped and _probe(session) is None
    try:
        jsc = getattr(session.sparkContext, "_jsc", None)
        return jsc is not None and not jsc.sc().isStopped()
    except Exception:
        return False


def _stop(session) -> None:
    try:
        if _is_connect(session):
            _few_retries(session, 0)  # releasing the session is best effort: not minutes on a dead server
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session.stop()
    except Exception:
        pass


def _connect(remote: str):
    """A Spark Connect session that has answered a query (the cached session is not touched before)."""
    if not remote.startswith("sc://"):
        raise SparkUnavailable(f"--remote must be a Spark Connect URL sc://HOST:PORT, not {remote!r}")
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError as exc:  # the connect extras are not installed
        raise SparkUnavailable(f"Spark Connect needs pyspark's connect extras ({exc}); "
                               "install grpcio, grpcio-status, googleapis-common-protos and zstandard") from exc
    try:
        session = ConnectSession.builder.remote(remote).create()  # not getOrCreate: that ignores the URL
    except Exception as exc:  # a malformed URL
        raise SparkUnavailable(f"Spark Connect {remote}: {_first_line(exc)}") from exc
    error = _probe(session)
    if error is not None:
        _stop(session)
        raise SparkUnavailable(f"cannot reach the Spark Connect server at {remote}: {error}")
    return session


def _loopback(master: str) -> bool:
    """local[...], or a master URL whose hosts are all loopback addresses (a cluster on this machine)."""
    if master.startswith("local"):
        return True
    hosts = [h.rsplit(":", 1)[0] for h in master.split("://", 1)[-1].split(",")]
    return all(h in ("localhost", "[::1]") or h.startswith("127.") for h in hosts)


def _check_master(master: str) -> None:
    """A standalone master nobody answers at fails here within seconds, not after Spark's minute of
    registration retries ending in a Py4J error."""
    if not master.startswith("spark://"):
        return
    errors = []
    for address in master[len("spark://"):].split(","):  # spark://h1:7077,h2:7077 (standby masters)
        host, _, port = address.rpartition(":") if ":" in address else (address, "", "7077")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
            return
        except (OSError, ValueError) as exc:
            errors.append(f"{address} ({getattr(exc, 'strerror', None) or exc})")
    raise SparkUnavailable(f"cannot reach the Spark master {master}: {', '.join(errors)}")


def _classic(master: str, conf: dict[str, str]):
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName("kafka-chaos-analysis")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.driver.memory", os.environ.get("KAFKA_CHAOS_SPARK_DRIVER_MEMORY", "4g")))
    log4j = f"-Dlog4j2.configurationFile=file:{LOG4J}" if LOG4J.is_file() else ""  # package data
    java = driver_java(master)
    driver = f"{log4j} {java_options(java)}".strip()
    if driver:
        builder = builder.config("spark.driver.extraJavaOptions", driver)
    if log4j:
        builder = builder.config("spark.executor.extraJavaOptions", log4j)
    if _loopback(master) and "spark.driver.host" not in conf:  # executors on this machine reach the driver on
        builder = (builder.config("spark.driver.host", "127.0.0.1")  # loopback; nothing else can
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in {**RUNTIME_CONF, **conf}.items():
        builder = builder.config(key, value)
    try:
        with _gateway_on(java), _jvm_output_to_log():
            session = builder.getOrCreate()
    except Exception as exc:
        raise SparkUnavailable(f"cannot start Spark ({master}): {_first_line(exc)}") from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


_GATEWAY_JAVA: Path | None = None  # the JVM the running gateway was started with


@contextmanager
def _gateway_on(java: Path | None):
    """Have pyspark's gateway JVM (one a process, kept across sessions) run on ``java``: a gateway started on another
    JVM is ended first, and the new one is launched with JAVA_HOME set to ``java``'s home (restored afterwards)."""
    global _GATEWAY_JAVA
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    if gateway is not None and _GATEWAY_JAVA is not None and _GATEWAY_JAVA != java:
        proc = getattr(gateway, "proc", None)
        gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None
        if proc is not None:
            proc.stdin.close()  # the gateway JVM exits when its stdin closes
            proc.wait(timeout=60)
    if SparkContext._gateway is not None:
        yield
        return
    saved = os.environ.get("JAVA_HOME")
    if java is not None:
        os.environ["JAVA_HOME"] = str(java.parent.parent)
    try:
        yield
        _GATEWAY_JAVA = java
    finally:
        if saved is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = saved


_JVM_LOG: Path | None = None  # where this process's gateway JVM writes its stdout and stderr


def jvm_log() -> Path | None:
    """The file that gets everything this process's Spark JVM (and the Python workers it forks) prints: Spark's log
    text never reaches a user's console. None before a local JVM was started."""
    return _JVM_LOG


@contextmanager
def _jvm_output_to_log():
    """The gateway JVM inherits this process's standard output and error when it is launched: point both at the JVM
    log for the launch only (a gateway already running is left as it is)."""
    global _JVM_LOG
    from pyspark import SparkContext
    if SparkContext._gateway is not None:
        yield
        return
    if _JVM_LOG is None:
        import atexit
        import tempfile
        _sweep_dead_jvm_logs(Path(tempfile.gettempdir()))
        fd, name = tempfile.mkstemp(prefix=f"{JVM_LOG_PREFIX}{os.getpid()}-", suffix=".log")
        os.close(fd)
        _JVM_LOG = Path(name)
        atexit.register(_JVM_LOG.unlink, missing_ok=True)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    log = os.open(_JVM_LOG, os.O_WRONLY | os.O_APPEND)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        for fd, old in ((1, saved[0]), (2, saved[1])):
            os.dup2(old, fd)
            os.close(old)
        os.close(log)


JVM_LOG_PREFIX = "kafka-chaos-spark-"  # + the owning process's pid


def _sweep_dead_jvm_logs(folder: Path) -> None:
    """The JVM logs of processes that are gone (killed, or a service that left by os._exit before it could)."""
    for path in folder.glob(f"{JVM_LOG_PREFIX}*.log"):
        pid = path.name[len(JVM_LOG_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            path.unlink(missing_ok=True)


class LogMark(NamedTuple):
    """Where the JVM log stood when an analysis began."""
    path: Path | None
    size: int


def jvm_log_mark() -> LogMark:
    path = jvm_log()
    return LogMark(path, path.stat().st_size if path is not None and path.exists() else 0)


def jvm_log_since(mark: LogMark) -> str:
    """What the JVM printed since ``mark`` (a JVM started after it: everything)."""
    path = jvm_log()
    if path is None or not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(mark.size if mark.path == path else 0)
        return f.read().decode("utf-8", "replace")


def _target(master: str | None, remote: str | None, conf: dict[str, str] | None = None) -> tuple:
    return (None, remote, ()) if remote else (master or "local[*]", None, tuple(sorted((conf or {}).items())))


def get_session(master: str | None = None, remote: str | None = None, conf: dict[str, str] | None = None):
    """The process's SparkSession for analysis, created on first use.

    ``master``: any Spark master URL (default ``local[*]``); ``remote``: a Spark Connect URL ``sc://host:port``
    (needs pyspark's connect extras: grpcio, grpcio-status, googleapis-common-protos, zstandard).
    A call with a different master/remote than the cached session stops it and builds a new one: a session
    held from an earlier call is then dead, so call get_session again rather than keeping one. An
    unreachable Spark Connect server or standalone master raises SparkUnavailable within seconds (and the
    cached session is kept). ``conf``: Spark properties for a ``master`` session (as spark-submit's --conf);
    ``spark.pyspark.python`` is the executors' Python (default: this interpreter, right for a cluster on this
    machine's file system), ``spark.driver.host`` the address executors reach this process at.
    """
    global _SESSION, _TARGET
    _quiet_python_warnings()
    target = _target(master, remote, conf)
    with _LOCK:
        if _SESSION is not None and _TARGET == target and _alive(_SESSION):
            return _SESSION
        os.environ["PYSPARK_PYTHON"] = (conf or {}).get("spark.pyspark.python") or sys.executable
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if remote:  # an unreachable target fails before the cached session is given up
            session = _connect(remote)
        else:
            _check_master(target[0])
        if _SESSION is not None:
            _stop(_SESSION)
            _SESSION, _TARGET = None, None
        if remote:
            os.environ[CONNECT_MODE] = "1"
        else:
            os.environ.pop(CONNECT_MODE, None)  # a classic SparkContext refuses to start in Connect mode
            session = _classic(target[0], dict(target[2]))
        apply_runtime_conf(session)
        _SESSION, _TARGET = session, target
        return session


def is_started(master: str | None = None, remote: str | None = None, conf: dict[str, str] | None = None) -> bool:
    """Whether get_session(master, remote, conf) would return an existing session (no JVM start-up)."""
    return _SESSION is not None and _TARGET == _target(master, remote, conf) and _alive(_SESSION)


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
            _stop(_SESSION)
            _SESSION, _TARGET = None, None
            os.environ.pop(CONNECT_MODE, None)
