"""Helpers the member-host tests share: a JSONL file read whole, and a wait for a condition's first true value."""
import json
import time
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(condition, timeout_s: float, what: str, every_s: float = 0.05):
    """The condition's first true value; an AssertionError naming `what` if none comes within timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"not within {timeout_s} s: {what}")
