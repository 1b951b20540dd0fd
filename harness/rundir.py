"""The run directory (contract v1 in DESIGN.md): where every fact of a run is written."""
from __future__ import annotations

import json
import logging
import secrets
import time
from contextlib import contextmanager
from pathlib import Path

SUBDIRS = ("produced", "consumed", "events", "logs", "report")
CLIENTS_LOGGER = "kafka-chaos"  # the parent of the harness's own clients' loggers (kafka-chaos.admin, .watcher, ...)
CLIENTS_LOG = "harness-clients.log"  # in logs/: what librdkafka said to the harness's own clients during the run
# Without a handler, Python prints a warning on stderr (logging.lastResort): a broker frozen for a second would put
# librdkafka's time-outs between the progress lines.
logging.getLogger(CLIENTS_LOGGER).addHandler(logging.NullHandler())


def new_run_id(name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-{secrets.token_hex(3)}"


def create_run_dir(runs_root: Path, run_id: str) -> Path:
    run_dir = runs_root / run_id
    for sub in SUBDIRS:
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    return run_dir


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


@contextmanager
def clients_logged(run_dir: Path):
    """While a run runs, its harness's own clients log to logs/harness-clients.log (never the terminal)."""
    handler = logging.FileHandler(run_dir / "logs" / CLIENTS_LOG, delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger(CLIENTS_LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
