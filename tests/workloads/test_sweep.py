"""A frozen workload whose harness was killed (SIGKILL runs no heal) is thawed by the next sweep."""
import os
import signal
import socket
import subprocess

from kafkanet.waiting import wait_until
from workloads.services import OWNER_ENV, sweep_stale_workloads


def state(pid: int) -> str:
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]


def frozen_sleeper(owner: str) -> subprocess.Popen:
    process = subprocess.Popen(["sleep", "60"], env={**os.environ, OWNER_ENV: owner})
    os.kill(process.pid, signal.SIGSTOP)
    wait_until(lambda: state(process.pid) == "T", 5, interval_s=0.01)
    return process


def test_frozen_orphans_are_thawed_and_live_runs_left_alone():
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = frozen_sleeper(f"{socket.gethostname()}:{gone.pid}")
    ours = frozen_sleeper(f"{socket.gethostname()}:{os.getpid()}")
    try:
        assert sweep_stale_workloads() >= 1
        assert state(orphan.pid) != "T"
        assert state(ours.pid) == "T", "a live harness's frozen member is its own fault, not a leftover"
    finally:
        for process in (orphan, ours):
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
            process.wait()
