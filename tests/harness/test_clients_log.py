"""The harness's own clients (the group watcher, the admin, the failover watch) log through Python's logging: what
librdkafka says to them (a refused connection, a request timed out during a freeze) goes to the run directory's
logs/harness-clients.log, never between the progress lines on the terminal (a CI failure of 2026-11-29)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A real librdkafka consumer pointed at a port nobody listens on: it logs "Connection refused" at level 3 (ERROR).
PROGRAM = """
import logging, sys, time
from pathlib import Path
from confluent_kafka import Consumer
from harness.rundir import CLIENTS_LOG, clients_logged, create_run_dir

class Watched:  # the harness's logger, passed on to; no handler of its own, which would keep Python's last resort
    # quiet and the test from failing
    def __init__(self, logger):
        self.logger, self.seen = logger, False

    def log(self, *args, **kwargs):
        self.seen = True
        self.logger.log(*args, **kwargs)

def refused():
    watched = Watched(logging.getLogger("kafka-chaos.watcher"))
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, logger=watched)
    deadline = time.monotonic() + 30
    while not watched.seen and time.monotonic() < deadline:  # until librdkafka has said it (a second or so)
        consumer.poll(0.2)
    assert watched.seen, "librdkafka said nothing"
    consumer.close()

run_dir = create_run_dir(Path(sys.argv[1]), "r")
if sys.argv[2] == "in-run":
    with clients_logged(run_dir):
        refused()
else:
    refused()
"""


def run(tmp_path, where: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path), where], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_client_log_line_during_a_run_goes_to_the_run_directory_and_not_the_terminal(tmp_path):
    done = run(tmp_path, "in-run")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    text = (tmp_path / "r" / "logs" / "harness-clients.log").read_text()
    assert "kafka-chaos.watcher" in text and "127.0.0.1:1" in text, text


def test_outside_a_run_the_client_log_lines_are_not_on_the_terminal_either(tmp_path):
    done = run(tmp_path, "outside")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert not (tmp_path / "r" / "logs" / "harness-clients.log").exists()
