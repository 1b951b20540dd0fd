"""How the harness hands a workload process its settings: one JSON document in an environment variable.

Not on the command line, where `ps` would show any credential in it.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time

ENV_VAR = "KAFKA_CHAOS_WORKLOAD_CONFIG"


def encode(config: dict) -> dict[str, str]:
    return {ENV_VAR: json.dumps(config)}


def decode() -> dict:
    try:
        return json.loads(os.environ[ENV_VAR])
    except KeyError:
        raise SystemExit(f"{ENV_VAR} is not set: workload processes are started by the kafka-chaos harness") from None


def run_workload(factory) -> int:
    """A workload process's main: settings from the harness; SIGTERM or SIGINT asks it to stop cleanly,
    and so does the death of the harness (an aborted harness runs no `finally`)."""
    workload = factory(decode())

    def stop(signum=None, frame=None):
        workload.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    on_harness_exit(stop, force=lambda: os._exit(1))
    return workload.run()


def on_harness_exit(stop, force, poll_s: float = 1.0, grace_s: float = 15.0) -> None:
    """Once the process that started this one is gone (we get re-parented): `stop`, and `force` if a
    clean stop has not ended the process within grace_s (closing a client can wait on a frozen broker)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll_s)
        stop()
        time.sleep(grace_s)
        force()

    threading.Thread(target=watch, name="harness-watch", daemon=True).start()
