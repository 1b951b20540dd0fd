"""The warm analysis service: one background process that keeps a local Spark session, and the code its JIT has
compiled, between analyses. `kafka-chaos analyze` and `kafka-chaos run` hand it the run directory instead of
starting a JVM each time: a 10M-record analysis takes about 15 s in a fresh JVM and 3 s in a warm one, and the
CLI process around it imports neither pyspark nor pyarrow (docs/benchmarks-history.md, issue 13).

Chosen over a Spark Connect server (the issue's idea), measured: a Connect client must import pyspark's Connect
client, pandas and grpc (1.6-2.8 s on this machine's 2 cores) and run the driver's Python in a cold process; a
request here is one line of JSON on a Unix socket and runs the very code a local analysis runs.

- Started on first use (`python -m analysis.service serve`, its own session, log in the service folder); it
  exits after idle_s() without a request, when its code is not the code of the asking client (an update), and on
  `kafka-chaos clean` (:func:`stop`).
- `kafka-chaos run` asks it to warm up while the group drains (:func:`warm_up`): the small built-in run analysed
  up to warm_rounds() times, stopping as soon as a request waits.
- Only its owner reaches it: the socket lives in a 0700 folder under ~/.cache, one per interpreter (venv).
- Off with KAFKA_CHAOS_ANALYSIS_SERVICE=0, and whenever --master or --remote names a Spark of its own.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

from kafkanet.waiting import require

from analysis.errors import AnalysisFailed, InputError

ENV = "KAFKA_CHAOS_ANALYSIS_SERVICE"         # "0": analyse in the calling process
DIR_ENV = "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR"  # where the socket and the log live (tests use their own)
IDLE_ENV = "KAFKA_CHAOS_ANALYSIS_IDLE_S"      # seconds without a request before the service exits (900)
# A warm-up analyses the small built-in run up to this many times (8), one at a time, and stops as soon as a request
# waits: the JIT keeps compiling for several analyses, and a run's group drains for longer than one takes
# (docs/benchmarks-history.md, thirteenth increment). A service that has analysed this many runs is warm.
WARM_ENV = "KAFKA_CHAOS_ANALYSIS_WARM_ROUNDS"
START_TIMEOUT_S = 120


def check_settings() -> None:
    """Raises InputError, naming the variable, for a setting of the service that cannot work."""
    idle_s(), warm_rounds()


def idle_s() -> float:
    return _setting(IDLE_ENV, 900.0, float, "a number of seconds above 0", lambda v: v > 0)


def warm_rounds() -> int:
    return _setting(WARM_ENV, 8, int, "a whole number of analyses, 0 or more", lambda v: v >= 0)


def _setting(name: str, default, kind, expected: str, ok):
    """An environment variable's value, ``default`` when unset; InputError naming it when it is not ``expected``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise InputError(f"{name}={text!r}: expected {expected}")
    return value


class ServiceError(RuntimeError):
    """The service could not be started or reached, or an analysis failed inside it (not bad input)."""


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def folder() -> Path:
    base = os.environ.get(DIR_ENV) or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-chaos" / "analysis-service"
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def socket_path() -> Path:
    return folder() / f"{hashlib.sha256(sys.executable.encode()).hexdigest()[:12]}.sock"


def code_version() -> str:
    """The analysis package as it is on disk, its sub-packages too: a service started from other code serves no
    client."""
    root = Path(__file__).parent
    files = sorted(root.rglob("*.py"))
    return hashlib.sha256(json.dumps([(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                                      for p in files]).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ client
def analyze(run_dir, progress=None, **options) -> dict:
    """The summary of ``analysis.analyze(run_dir, **options)``, computed by the service (started if none runs).
    Raises InputError for bad input, AnalysisFailed when the analysis failed, ServiceError when the service fails."""
    say = progress or (lambda phase, detail="": None)
    request = {"op": "analyze", "run_dir": str(Path(run_dir).resolve()), "options": options, "code": code_version()}
    for _ in range(3):  # a service of other code exits when asked, or was exiting: the next try starts the right one
        reply = _ask(request, say)
        if not reply.get("stale") and not reply.get("gone"):
            break
    if "summary" in reply:
        return reply["summary"]
    error = reply.get("error") or {}
    if error.get("kind") == "input":
        raise InputError(error["message"])
    if error.get("kind") == "analysis":
        raise AnalysisFailed(error["step"], error["error"], error["log"])
    raise ServiceError(error.get("message") or f"unexpected answer {reply}")


def warm_up() -> None:
    """Start the service if none runs and have it analyse a small synthetic run, in the background: what a run does
    while its group drains, so that its own analysis finds Spark started and compiled. Never raises."""
    def work():
        try:
            _ask({"op": "warm", "code": code_version()}, lambda *a: None)
        except Exception:  # the analysis proper will say what is wrong
            pass
    threading.Thread(target=work, name="analysis-warm-up", daemon=True).start()


def stop() -> bool:
    """Ask a running service to exit; True if one answered."""
    try:
        with _connect() as conn:
            _send(conn, {"op": "stop"})
            conn.recv(1)
        return True
    except OSError:
        return False


def running() -> bool:
    try:
        with _connect():
            return True
    except OSError:
        return False


@contextmanager
def _connect(timeout_s: float | None = None):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout_s)
    try:
        conn.connect(str(socket_path()))
        yield conn
    finally:
        conn.close()


def _send(conn, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _ask(request: dict, say) -> dict:
    """The service's answer; {"gone": True} when it went away before it began (one that was exiting)."""
    _ensure_started(say)
    began = False
    try:
        with _connect() as conn:
            _send(conn, request)
            for line in conn.makefile("rb"):
                message = json.loads(line)
                if "progress" in message:
                    began = True
                    say(*message["progress"])
                else:
                    return message
    except OSError as exc:
        if not began:
            return {"gone": True}
        raise ServiceError(f"the analysis service at {socket_path()} failed: {exc}; its log: {_log()}") from exc
    if not began:
        return {"gone": True}
    raise ServiceError(f"the analysis service closed the connection; its log: {_log()}")


def _log() -> Path:
    return socket_path().with_suffix(".log")


def _ensure_started(say) -> None:
    check_settings()  # the caller's bad input, not a service that will not start
    if running():
        return
    with open(folder() / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one client starts it, the others find it running
        if running():
            return
        say("starting the analysis service", str(socket_path()))
        with open(_log(), "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "analysis.service", "serve"], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    cwd=str(Path(__file__).resolve().parents[1]))
        require(lambda: _answers(proc), START_TIMEOUT_S, "the analysis service did not start", error=ServiceError,
                fatal=(ServiceError,), interval_s=0.05, detail=lambda: f"its log: {_log()}")


def _answers(proc: subprocess.Popen) -> bool:
    """The service started answers; one that exited instead ends the wait at once."""
    if running():
        return True
    if proc.poll() is not None:
        raise ServiceError(f"the analysis service did not start (exit {proc.returncode}); its log: {_log()}")
    return False


# ------------------------------------------------------------------------------------------------ server
class Server:
    """Answers one connection a thread; analyses run one at a time. Exits when idle, stale or asked to."""

    def __init__(self, path: Path, idle_s: float):
        self.path, self.idle_s, self.code = path, idle_s, code_version()
        self.busy = threading.Lock()
        self.last = time.monotonic()
        self.leaving = False
        self.warm_rounds = warm_rounds()
        self.analyses = 0                 # analyses done, warm-up rounds included
        self.waiting = 0                  # requests waiting for the analysis under way (a warm-up yields to them)
        self.counts = threading.Lock()

    def serve(self) -> None:
        if self.path.exists():
            self.path.unlink()  # a dead service's socket (the start lock says no live one answers)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(16)
        threading.Thread(target=self._exit_when_idle, daemon=True).start()
        print(f"analysis service {os.getpid()} on {self.path} (code {self.code})", flush=True)
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _exit_when_idle(self) -> None:
        while True:
            time.sleep(min(self.idle_s, 5))
            if time.monotonic() - self.last > self.idle_s and self.busy.acquire(blocking=False):
                self._exit("idle")

    def _exit(self, why: str) -> None:
        from analysis.engine.spark import jvm_log
        print(f"analysis service exits: {why}", flush=True)
        self._unlink()
        if (log := jvm_log()) is not None:  # os._exit runs no atexit hook: the JVM's log goes here
            log.unlink(missing_ok=True)
        os._exit(0)

    def _unlink(self) -> None:
        if not self.leaving:  # once leaving, the socket at the path may be a newer service's
            try:
                self.path.unlink()
            except OSError:
                pass

    def _leave(self, conn, why: str) -> None:
        """Tell the client that this service is stale and serve no new request from then on: new clients find no
        socket and start a service of their code, one that connected meanwhile is closed unanswered (it tries again);
        the analysis under way ends first."""
        self._unlink()
        self.leaving = True
        try:
            _send(conn, {"stale": True})
        except OSError:
            pass  # the client went away; the service leaves all the same
        with self.busy:
            self._exit(why)

    def _handle(self, conn) -> None:
        with conn:
            line = conn.makefile("rb").readline()
            if not line:  # a client looking whether the service runs
                return
            request = json.loads(line)
            op = request.get("op")
            if op == "stop":
                self._exit("asked to stop")
            if request.get("code") != self.code:
                self._leave(conn, "its code changed")
            with self._waiting(op != "warm"), self.busy:
                if self.leaving:
                    return
                self.last = time.monotonic()
                try:
                    _send(conn, self._work(op, request, lambda phase, detail="": _send(conn, {"progress": [phase, detail]})))
                except OSError:
                    pass  # the client went away
                finally:
                    self.last = time.monotonic()

    @contextmanager
    def _waiting(self, counted: bool):
        """While a request (not a warm-up) waits for the lock: counted, so that a warm-up under way stops."""
        with self.counts:
            self.waiting += counted
        try:
            yield
        finally:
            with self.counts:
                self.waiting -= counted

    def _warm_up(self) -> int:
        """Analyse the small run until the service has done warm_rounds() analyses or a request waits; how many."""
        rounds = 0
        print(f"warm-up begins ({self.analyses} analyses done)", flush=True)
        while self.analyses < self.warm_rounds and not (rounds and self.waiting):
            _warm()
            rounds += 1
            self.analyses += 1
        print(f"warm-up: {rounds} analyses of the small run" + (", a request came" if self.analyses < self.warm_rounds else ""),
              flush=True)
        return rounds

    def _work(self, op: str, request: dict, progress) -> dict:
        from analysis.job import analyze as local_analyze
        from analysis.job import json_default
        from analysis.engine.spark import SparkUnavailable
        try:
            if op == "warm":
                return {"warm": self._warm_up()}
            self.analyses += 1
            return {"summary": json.loads(json.dumps(local_analyze(request["run_dir"], progress=progress, **request["options"]),
                                                     default=json_default))}
        except InputError as exc:
            return {"error": {"kind": "input", "message": str(exc)}}
        except SparkUnavailable as exc:
            return {"error": {"kind": "spark", "message": str(exc)}}
        except AnalysisFailed as exc:
            return {"error": {"kind": "analysis", "step": exc.step, "error": exc.error, "log": str(exc.log)}}
        except Exception as exc:
            print(traceback.format_exc(), flush=True)
            text = (str(exc).strip().splitlines() or [""])[0]
            return {"error": {"kind": "internal", "message": f"the analysis service failed: {type(exc).__name__}: "
                                                            f"{text}; its log: {_log()}"}}


def _warm() -> None:
    """Analyse a small synthetic run (two members, a rebalance, a re-delivered tail) in a temporary folder."""
    import tempfile

    from analysis.job import analyze as local_analyze
    from analysis.engine.synthetic import write_run
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-warm-") as tmp:
        local_analyze(write_run(Path(tmp)))


def main(argv: list[str]) -> int:
    if argv[:1] != ["serve"]:
        print("usage: python -m analysis.service serve", file=sys.stderr)
        return 2
    Server(socket_path(), idle_s()).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
