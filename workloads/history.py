"""Append-only JSONL history files, flushed before anything that depends on them happens."""
from __future__ import annotations

import json
import os
from pathlib import Path

from kafkanet.clock import now_ms  # re-exported: every workload stamps its rows with the one clock
from workloads.config import MemberConfig


# How the group refuses a duplicated group.instance.id: classic fences the old member (KIP-345), KIP-848 refuses
# the new one while the instance id is held. A member that ends on one of these logs `fenced`.
FENCING = ("FENCED_INSTANCE_ID", "UNRELEASED_INSTANCE_ID")


def end_event(error: str, text: str, fatal: bool, request: str | None) -> tuple[str, dict]:
    """The kind and fields of the event a member logs when an error ends it (either client, the events contract):
    the Kafka error name, whether the client marked it fatal, and the group request that drew it (None: unknown)."""
    return ("fenced" if error in FENCING else "error"), {"error": error, "fatal": fatal, "request": request,
                                                         "detail": f"{error}: {text}"}


def started_facts(client: str, client_version: str | None, member: MemberConfig | None = None,
                  librdkafka_version: str | None = None) -> dict:
    """The typed facts of a `started` event (the events contract; analysis/rundir/history.py STARTED_FACTS reads them),
    for every writer: the client that ran and, for a group member, the settings it joined with."""
    facts: dict = {"client": client}
    if member is not None:
        facts |= {"protocol": member.protocol, "assignor": member.assignor or member.remote_assignor,
                  "instance_id": member.instance_id, "commit": member.commit,
                  "heartbeat_interval_ms": member.heartbeat_interval_ms}
        if member.host is not None:  # a hosted member: its host, and the client settings hosting changed
            facts |= {"host": member.host, "hosted_settings": member.hosted_settings}
    facts["client_version"] = client_version
    if librdkafka_version is not None:
        facts["librdkafka_version"] = librdkafka_version
    return facts


class JsonlLog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        drop_unterminated_tail(path)
        self._file = open(path, "a", encoding="utf-8", buffering=1 << 16)

    def append(self, row: dict) -> None:
        self._file.write(json.dumps(row, separators=(",", ":")) + "\n")

    def extend(self, rows) -> None:
        self._file.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))

    def flush(self) -> None:
        """To the OS: survives a killed process (the failure the harness injects), not a lost host."""
        self._file.flush()

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            self._file.close()


def drop_unterminated_tail(path: Path) -> None:
    """A process killed while its buffer was being written can leave half a line. The rows on it were never
    flushed as a whole, so nothing that depends on them (a commit) happened: a restarted process removes
    the fragment instead of appending after it, which would leave a broken line in the middle of the log."""
    try:
        fh = open(path, "r+b")
    except FileNotFoundError:
        return
    with fh:
        end = keep = fh.seek(0, os.SEEK_END)
        while keep > 0:
            start = max(0, keep - (1 << 16))
            fh.seek(start)
            newline = fh.read(keep - start).rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
        if keep != end:
            fh.truncate(keep)
