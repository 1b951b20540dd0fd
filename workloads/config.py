"""How the harness hands a workload process its settings: one JSON document in an environment variable.

Not on the command line, where `ps` would show any credential in it.
"""
from __future__ import annotations

import json
import os
import signal

ENV_VAR = "KAFKA_CHAOS_WORKLOAD_CONFIG"


def encode(config: dict) -> dict[str, str]:
    return {ENV_VAR: json.dumps(config)}


def decode() -> dict:
    try:
        return json.loads(os.environ[ENV_VAR])
    except KeyError:
        raise SystemExit(f"{ENV_VAR} is not set: workload processes are started by the kafka-chaos harness") from None


def run_workload(factory) -> int:
    """A workload process's main: settings from the harness; SIGTERM or SIGINT asks it to stop cleanly."""
    workload = factory(decode())

    def stop(signum, frame):
        workload.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return workload.run()
