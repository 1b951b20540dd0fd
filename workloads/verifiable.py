"""Turn VerifiableConsumer's JSON events into the run-directory contract (consumed/ and events/)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from workloads.history import JsonlLog, end_event

CLIENT = "java"
FACTS_EVENT = "kafka_chaos_member"  # written by workloads/java_member.py before the JVM starts
FATAL_EVENT = "kafka_chaos_fatal"   # written by workloads/java_member.py when the JVM's log shows what ended it
# VerifiableConsumer's own log line when an exception ends its loop (it then closes and prints shutdown_complete,
# and the JVM exits 0 as after a requested stop: this line is the only difference).
TERMINATING = "Error during processing, terminating consumer process"
# The Java client's own ERROR lines that name the group request an error came back on (Kafka's ApiExceptions carry
# no stack trace, so the exception itself cannot say where it was thrown).
REQUEST_HINTS = (("Offset commit failed", "OffsetCommit"), ("error in heartbeat thread", "Heartbeat"))
KAFKA_ERRORS = "org.apache.kafka.common.errors."


def _partitions(event: dict) -> list[str]:
    return [f"{p['topic']}:{p['partition']}" for p in event.get("partitions", [])]


class Converter:
    """VerifiableConsumer's raw events into the contract as the raw file grows: java_member.py polls one
    while its JVM runs, so the member's logs are in the contract even if the harness is killed.

    A converter rewrites the member's consumed/ and events/ logs from the start of the raw file: one that
    starts again (a crashed member restarted, or the harness's final pass after a launcher was killed)
    never writes a row twice. Only whole lines are read; a cut-short last line counts only at close(),
    where it is skipped (the JVM was killed while printing it, before it committed anything after it)."""

    def __init__(self, raw_path: Path, run_dir: Path, member: str, instance_id: str | None) -> None:
        self.raw_path, self.member, self.instance_id = raw_path, member, instance_id
        paths = [run_dir / "consumed" / f"{member}.jsonl", run_dir / "events" / f"{member}.jsonl"]
        for path in [*paths, _done_marker(raw_path)]:
            path.unlink(missing_ok=True)
        self.consumed, self.events = (JsonlLog(path) for path in paths)
        self.position, self.rows, self.written_events, self.previous_ts = 0, 0, 0, -1
        self.commit_ids, self.in_flight = 0, None  # the commit_sent not yet answered: (commit_id, its ts)
        self.facts: dict = {"client": CLIENT, "instance_id": instance_id}  # until the launcher's FACTS_EVENT

    def poll(self) -> None:
        """Convert the whole lines added since the last call, and flush them."""
        try:
            with open(self.raw_path, "rb") as raw:
                raw.seek(self.position)
                data = raw.read()
        except FileNotFoundError:
            return
        whole = data[:data.rfind(b"\n") + 1]
        self.position += len(whole)
        for line in whole.decode(errors="replace").splitlines():
            self._line(line)
        self.consumed.flush()
        self.events.flush()

    def close(self) -> tuple[int, int]:
        """The last whole lines, then the logs closed. Returns (consumed rows, events) written."""
        self.poll()
        self.consumed.close()
        self.events.close()
        _done_marker(self.raw_path).write_text(str(self.position))
        return self.rows, self.written_events

    def _event(self, ts: int, kind: str, **fields) -> None:
        self.events.append({"ts_ms": ts, "member": self.member, "kind": kind, "generation": -1, **fields})
        self.written_events += 1

    def _line(self, line: str) -> None:
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            return  # the last line of a killed JVM, followed by a restarted one's output
        name, ts = e.get("name"), e.get("timestamp", -1)
        # VerifiableConsumer commits right after it prints a poll's records: the commit was requested
        # no earlier than the event before it.
        requested_at, self.previous_ts = self.previous_ts, ts
        if name == FACTS_EVENT:  # a new JVM: its commit in flight, if any, is never answered
            self.facts |= {k: v for k, v in e.items() if k not in ("name", "timestamp")}
            self.in_flight = None
        elif name == "record_data":
            producer_id, _, seq = str(e.get("value") or "").partition(":")
            self.consumed.append({"topic": e["topic"], "partition": e["partition"], "offset": e["offset"],
                                  "member": self.member, "consumed_at_ms": ts, "key": e.get("key"),
                                  "producer_id": producer_id or None, "seq": int(seq) if seq.isdigit() else None,
                                  "instance_id": self.instance_id, "generation": -1, "client": CLIENT,
                                  "n": self.rows})  # VerifiableConsumer prints records in consumption order
            self.rows += 1
        elif name == "startup_complete":
            self._event(ts, "started", **self.facts, detail="VerifiableConsumer")
        elif name == "partitions_assigned":
            self._event(ts, "assigned", partitions=_partitions(e))
        elif name == "partitions_revoked":
            self._event(ts, "revoked", partitions=_partitions(e))
        elif name == "records_consumed":
            self._commit_sent(ts, e)
        elif name == "offsets_committed":
            offsets = {f"{o['topic']}:{o['partition']}": o["offset"] for o in e.get("offsets") or []}
            window = {"requested_at_ms": requested_at}
            if self.in_flight is not None:
                window = {"commit_id": self.in_flight[0], "requested_at_ms": self.in_flight[1]}
                self.in_flight = None
            if e.get("success"):
                self._event(ts, "committed", offsets=offsets, **window)
            else:
                self._event(ts, "commit_failed", offsets=offsets, **window, detail=e.get("error"))
        elif name == FATAL_EVENT:
            kind, fields = end_event(e.get("error"), e.get("message") or "", True, e.get("request"))
            self._event(ts, kind, **fields)
        elif name == "shutdown_complete":
            self._event(ts, "stopped")


    def _commit_sent(self, ts: int, e: dict) -> None:
        """VerifiableConsumer prints a poll's records, then commits them synchronously (unless it auto-commits): the
        commit of each partition's last offset + 1 leaves after this line. Logged as ``commit_sent``, so that a JVM
        killed before the answer leaves a trace of a commit that may have landed."""
        offsets = {f"{p['topic']}:{p['partition']}": p["maxOffset"] + 1 for p in e.get("partitions") or []
                   if p.get("maxOffset") is not None}
        if self.facts.get("commit") == "auto" or not offsets:
            return
        self.in_flight, self.commit_ids = (self.commit_ids, ts), self.commit_ids + 1
        self._event(ts, "commit_sent", offsets=offsets, commit_id=self.in_flight[0])


def kafka_error_name(exception: str) -> str:
    """org.apache.kafka.common.errors.FencedInstanceIdException -> FENCED_INSTANCE_ID (Kafka names its error codes
    and their exceptions alike); any other class keeps its own simple name."""
    simple = exception.rsplit(".", 1)[-1]
    if not exception.startswith(KAFKA_ERRORS) or not simple.endswith("Exception"):
        return simple
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", simple[:-len("Exception")]).upper()


class FatalWatch:
    """Reads VerifiableConsumer's log (its stderr) line by line and gives the raw FATAL_EVENT of the exception that
    ended its loop, once: the exception's Kafka error name and message (the line after TERMINATING), and the group
    request the client's last ERROR line before it names (REQUEST_HINTS), else None."""

    def __init__(self, now_ms) -> None:
        self.now_ms, self.request, self.pending, self.done = now_ms, None, None, False

    def line(self, text: str) -> dict | None:
        text = text.rstrip("\n")
        if self.done:
            return None
        if self.pending is None:
            self.request = next((api for hint, api in REQUEST_HINTS if hint in text), self.request)
            if TERMINATING in text:
                self.pending = {"name": FATAL_EVENT, "timestamp": self.now_ms(), "request": self.request}
            return None
        exception, _, message = text.partition(": ")  # the trace's first line: "<exception class>: <message>"
        self.done = True
        return {**self.pending, "error": kafka_error_name(exception.strip()), "message": message.strip()}


def _done_marker(raw_path: Path) -> Path:
    return raw_path.with_name(raw_path.name + ".converted")


def fully_converted(raw_path: Path) -> bool:
    """Did a converter close after reading the whole raw file (its launcher was not killed first)?"""
    try:
        return int(_done_marker(raw_path).read_text()) == raw_path.stat().st_size
    except (FileNotFoundError, ValueError):
        return False


def convert(raw_path: Path, run_dir: Path, member: str, instance_id: str | None) -> tuple[int, int]:
    """The whole raw file at once (the harness's final pass). Returns (consumed rows, events) written."""
    return Converter(raw_path, run_dir, member, instance_id).close()
