"""Library mode: your own consumer as a group member, writing the run-directory contract (docs/DESIGN.md).

Make the consumer through this module instead of confluent_kafka, and say when the work on a record is done:

    from workloads import app

    consumer = app.Consumer({"enable.auto.commit": False})   # your settings; the run's are added
    consumer.subscribe(app.topics(["orders"]), on_revoke=commit_what_you_did)
    while running:                                             # set false on SIGTERM (how the harness stops it)
        batch = [m for m in consumer.consume(100, timeout=1.0) if m.error() is None]
        for message in batch:
            work(message)
            consumer.processed(message)                        # one row of consumed/<member>.jsonl
        if batch:                                              # nothing consumed: confluent-kafka raises _NO_OFFSET
            try:
                consumer.commit(asynchronous=False)            # logged as a commit window
            except KafkaException:                             # a rebalance under way: the next owner reads on
                pass                                           # from the last commit
    consumer.close()

Inside a run (the harness set KAFKA_CHAOS_WORKLOAD_CONFIG) the consumer gets the run's bootstrap servers, group,
client.id (the member's name: the harness's rpc rules and cuts find the member by it), group.instance.id, protocol,
assignor, time-outs and credentials, over yours; your enable.auto.commit, auto.offset.reset and max.poll.interval.ms
stay yours. It logs `started` (client "app", the scenario's commit mode), `assigned`/`revoked`/`lost` with the
generation (your listener runs too: `revoked` is logged after yours returns, so a commit it makes belongs to the
ownership it ends), a row a processed record (`producer_id:seq` read from the value, `n` in poll order), and each
commit as a window (`commit_sent` once every row before it is flushed, then `committed` or `commit_failed`). It logs
what your program commits and never corrects it. Outside a run it is a plain confluent_kafka.Consumer; in output-topic
mode (consumer_group.output) it adds the run's settings and logs nothing (the harness reads your output topic).

Standard library and confluent-kafka only: the harness puts this tree on PYTHONPATH for a command member.
The project's own member (workloads/member.py) writes the contract through the same pieces.
"""
from __future__ import annotations

import functools
import json
import os
import struct
from pathlib import Path

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from workloads import config as workload_config
from workloads.config import MemberConfig
from workloads.history import JsonlLog, end_event, now_ms, started_facts
from workloads.producer import value_parts
from workloads.security import security_config

CLIENT = "app"
# settings a program keeps when it sets them: how it commits and where it starts are the program's to choose
PROGRAM_CHOOSES = ("enable.auto.commit", "auto.commit.interval.ms", "auto.offset.reset", "max.poll.interval.ms")


def consumer_settings(cfg: MemberConfig) -> dict:
    """A member's client settings from its config (the run's bootstrap, group, identity, protocol and time-outs)."""
    settings = {
        **security_config(),
        "bootstrap.servers": cfg.bootstrap_servers,
        "group.id": cfg.group_id,
        "client.id": cfg.member,
        "enable.auto.commit": cfg.commit == "auto",
        "auto.offset.reset": "earliest",
        "max.poll.interval.ms": cfg.max_poll_interval_ms,
        "group.protocol": cfg.protocol,
    }
    if cfg.protocol == "classic":
        settings.update({
            "partition.assignment.strategy": cfg.assignor,
            "session.timeout.ms": cfg.session_timeout_ms,
            "heartbeat.interval.ms": cfg.heartbeat_interval_ms,
        })
    elif cfg.remote_assignor:
        settings["group.remote.assignor"] = cfg.remote_assignor
    if cfg.commit == "auto":
        # librdkafka's defaults: an offset is stored as consume() hands the record over, and a timer
        # commits what is stored. A crash can therefore lose records committed but not yet logged.
        settings["auto.commit.interval.ms"] = cfg.auto_commit_interval_ms or 5000
    if cfg.instance_id:
        settings["group.instance.id"] = cfg.instance_id
    if cfg.metadata_refresh_ms:
        settings["topic.metadata.refresh.interval.ms"] = cfg.metadata_refresh_ms
    settings.update(cfg.hosted_settings)
    settings.update(cfg.extra)
    return settings


def program_settings(cfg: MemberConfig, own: dict) -> dict:
    """A program's settings with the run's added: the run's identity, protocol and time-outs win; the program's
    choice of PROGRAM_CHOOSES stays."""
    run = consumer_settings(cfg)
    chosen = {k: v for k, v in own.items() if k in PROGRAM_CHOOSES}
    return {**own, **run, **chosen}


def subscription(cfg: MemberConfig) -> list[str]:
    """The run's topics by name (or only the member's own, consumer_group.members[i].topics), or the pattern
    (librdkafka: a name that starts with ^ is a regular expression; anchored at both ends, so it means what
    Java's Pattern.matches means)."""
    if cfg.pattern:
        return [f"^({cfg.pattern})$"]
    return list(cfg.subscribed_topics or cfg.topics)


def current_generation(consumer) -> int:
    """The group generation (KIP-848: the member epoch) this member is in; -1 when unknown.

    librdkafka has no getter; its serialized group metadata is b"CGMDv2:" + int32 generation
    (native byte order) + group id ... That layout is undocumented, so anything unexpected gives -1.
    """
    blob = consumer.consumer_group_metadata()
    if not isinstance(blob, bytes) or not blob.startswith(b"CGMDv2:") or len(blob) < 11:
        return -1
    return struct.unpack("=i", blob[7:11])[0]


def next_sequence(log: Path) -> int:
    """The consumption sequence number after the last row of a consumed log (0 for a new log): its last line's n
    plus one. Read from the tail only (JsonlLog has already dropped a cut-short last line)."""
    try:
        with open(log, "rb") as fh:
            end = fh.seek(0, 2)
            fh.seek(max(0, end - 4096))
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            n = json.loads(line).get("n")
        except ValueError:
            continue
        return n + 1 if isinstance(n, int) else 0
    return 0


def partition_names(partitions) -> list[str]:
    return [f"{p.topic}:{p.partition}" for p in partitions]


def is_fatal(error: KafkaError) -> bool:
    """librdkafka hands a fatal error to consume() as a _FATAL message whose fatal() flag may be unset."""
    return error.fatal() or error.code() == KafkaError._FATAL


def error_detail(error) -> str:
    """A KafkaError as events carry it: the Kafka error name first (ILLEGAL_GENERATION: ...)."""
    return f"{error.name()}: {error.str()}"


def package_version() -> str:
    """confluent-kafka's release: version() is (text, number) before 2.16 and the text from 2.16 on."""
    version = confluent_kafka.version()
    return version if isinstance(version, str) else version[0]


def row_of(message, member: str, at: int, generation: int, n: int, instance_id: str | None, client: str) -> dict:
    """A consumed record as consumed/<member>.jsonl holds it; the sequenced producer's value is `producer_id:seq`."""
    producer_id, seq = value_parts(message.value())
    return {"topic": message.topic(), "partition": message.partition(), "offset": message.offset(), "member": member,
            "consumed_at_ms": at, "key": message.key().decode(errors="replace") if message.key() else None,
            "producer_id": producer_id or None, "seq": int(seq) if seq.isdigit() else None,
            "instance_id": instance_id, "generation": generation, "client": client, "n": n}


class ContractLog:
    """One member's side of the run-directory contract: consumed/<member>.jsonl and events/<member>.jsonl, the
    consumption sequence `n` (a restarted process goes on from its log's last row), and each commit's window.

    A commit's window: the broker applies a commit somewhere between its sending and its answer, and a member frozen
    mid-commit learns the answer long after, so both ends are logged. Every consumed row is flushed before
    ``commit_sent``, and ``commit_sent`` is flushed before the commit leaves: a member killed before the answer leaves
    a trace of a commit that may have landed, and never a commit of a row it did not log. ``commit_id`` (per process)
    pairs the sending with its answer (``requested_at_ms``: the sending)."""

    def __init__(self, cfg: MemberConfig, client: str) -> None:
        self.cfg, self.name, self.client = cfg, cfg.member, client
        run_dir = Path(cfg.run_dir)
        self.consumed = JsonlLog(run_dir / "consumed" / f"{self.name}.jsonl")
        self.next_n = next_sequence(run_dir / "consumed" / f"{self.name}.jsonl")
        self.events = JsonlLog(run_dir / "events" / f"{self.name}.jsonl")
        self.generation = -1  # the last one seen; kept for events after close()
        self.next_commit_id = 0
        self.sent_async: list[tuple[dict, int, int]] = []  # (offsets, commit_id, requested_at) awaiting their answer

    def event(self, kind: str, **fields) -> None:
        self.events.append({"ts_ms": now_ms(), "member": self.name, "kind": kind, "generation": self.generation,
                            **fields})
        self.events.flush()

    def take_n(self) -> int:
        n, self.next_n = self.next_n, self.next_n + 1
        return n

    def rows(self, rows: list[dict], flush: bool = True) -> None:
        """Consumed rows; unflushed (`flush` false) they reach the file before the next commit is logged as sent."""
        self.consumed.extend(rows)
        if flush:
            self.consumed.flush()

    def commit(self, offsets: list[TopicPartition], send, asynchronous: bool):
        """Log the commit's window around ``send()`` (the client's commit call): sync, `committed` or
        `commit_failed` (the KafkaException raised again); async, its answer comes to :meth:`answer`."""
        committed = {f"{tp.topic}:{tp.partition}": tp.offset for tp in offsets}
        window = self.open_window(committed)
        if asynchronous:
            self.sent_async.append((committed, window["commit_id"], window["requested_at_ms"]))
            return send()
        try:
            result = send()
        except KafkaException as exc:
            self.event("commit_failed", offsets=committed, **window, detail=error_detail(exc.args[0]))
            raise
        self.event("committed", offsets=committed, **window)
        return result

    def open_window(self, committed: dict[str, int]) -> dict:
        """A commit's opening: every consumed row flushed, then `commit_sent`; the window's fields for its answer."""
        self.consumed.flush()
        commit_id, self.next_commit_id = self.next_commit_id, self.next_commit_id + 1
        requested_at = now_ms()
        self.event("commit_sent", offsets=committed, commit_id=commit_id)
        return {"commit_id": commit_id, "requested_at_ms": requested_at}

    def answer(self, err, partitions) -> None:
        """The answer to an asynchronous commit: of one sent through :meth:`commit` (paired by its offsets; answers
        come in the order of the requests), or of the auto-commit timer (no window known)."""
        offsets = {f"{p.topic}:{p.partition}": p.offset for p in partitions}
        window = {}
        sent = next((i for i, (o, _, _) in enumerate(self.sent_async) if o == offsets), None)
        if sent is not None:
            _, commit_id, requested_at = self.sent_async.pop(sent)
            window = {"commit_id": commit_id, "requested_at_ms": requested_at}
        if err is None:
            self.event("committed", offsets=offsets, **window)
        else:
            self.event("commit_failed", offsets=offsets, **window, detail=error_detail(err))

    def end_on(self, error: KafkaError, request: str | None) -> None:
        kind, fields = end_event(error.name(), error.str(), is_fatal(error), request)
        self.event(kind, **fields)

    def close(self) -> None:
        self.consumed.close()
        self.events.close()


def run_config() -> MemberConfig | None:
    """This member's config when the harness started the program (KAFKA_CHAOS_WORKLOAD_CONFIG); None outside a run.
    Decoded once per value of the variable (app.topics, member, producer_settings and Consumer all ask)."""
    return _decoded(os.environ.get(workload_config.ENV_VAR))


@functools.lru_cache(maxsize=1)
def _decoded(encoded: str | None) -> MemberConfig | None:
    return None if encoded is None else workload_config.decode_text(MemberConfig, encoded)


def member(default: str | None = None) -> str | None:
    """This member's name inside a run (its client.id), else ``default``."""
    cfg = run_config()
    return default if cfg is None else cfg.member


def topics(default: list[str] | None = None) -> list[str]:
    """The topics to subscribe to: the run's inside a run, else ``default``."""
    cfg = run_config()
    if cfg is None:
        if default is None:
            raise ValueError("not in a kafka-chaos run: pass the topics to subscribe to")
        return list(default)
    return subscription(cfg)


def producer_settings(own: dict) -> dict:
    """A producer's settings with the run's bootstrap servers, credentials and the member's name as client.id added
    (a program that writes an output topic); ``own`` as it is outside a run."""
    cfg = run_config()
    if cfg is None:
        return dict(own)
    return {**own, **security_config(), "bootstrap.servers": cfg.bootstrap_servers, "client.id": cfg.member}


class Consumer(confluent_kafka.Consumer):
    """A confluent_kafka.Consumer that writes the run-directory contract inside a run (the module's docstring)."""

    def __init__(self, settings: dict, **kwargs) -> None:
        self._cfg = run_config()
        self._log = None
        settings = dict(settings, **kwargs)
        if self._cfg is not None:
            settings = program_settings(self._cfg, settings)
        if self._cfg is not None and self._cfg.output_topic is None:  # output-topic mode: the harness reads the output
            self._log = ContractLog(self._cfg, CLIENT)
            self._polled: dict[tuple[str, int, int], tuple[int, int, int]] = {}  # -> (n, at, generation)
            self._their_on_commit = settings.pop("on_commit", None)
            settings["on_commit"] = self._on_commit
        super().__init__(settings)

    # what the program calls ------------------------------------------------------------------------------------------
    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None):
        if self._log is None:
            kwargs = {k: v for k, v in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)) if v}
            return super().subscribe(topics, **kwargs)
        their_lost = on_lost or on_revoke  # librdkafka hands lost partitions to on_revoke when there is no on_lost

        def assigned(consumer, partitions):
            self._log.generation = current_generation(self)
            self._log.event("assigned", partitions=partition_names(partitions), member_id=self.memberid())
            if on_assign:
                on_assign(consumer, partitions)

        def revoked(consumer, partitions):
            if on_revoke:
                on_revoke(consumer, partitions)
            self._log.event("revoked", partitions=partition_names(partitions))

        def lost(consumer, partitions):
            self._log.event("lost", partitions=partition_names(partitions))
            if their_lost:
                their_lost(consumer, partitions)

        super().subscribe(topics, on_assign=assigned, on_revoke=revoked, on_lost=lost)
        self._log.event("started", **started_facts(CLIENT, package_version(), self._cfg,
                                                   librdkafka_version=confluent_kafka.libversion()[0]),
                        detail=f"commit={self._cfg.commit}")

    def poll(self, timeout: float = -1):
        message = super().poll(timeout)
        if self._log is not None and message is not None:
            self._polled_batch([message])
        return message

    def consume(self, num_messages: int = 1, timeout: float = -1):
        messages = super().consume(num_messages, timeout)
        if self._log is not None and messages:
            self._polled_batch(messages)
        return messages

    def processed(self, message) -> None:
        """The program's work on ``message`` is done: its row in consumed/<member>.jsonl (flushed before the next
        commit is logged as sent). A message this consumer did not hand over is an error of the program."""
        if self._log is None:
            return
        key = (message.topic(), message.partition(), message.offset())
        try:
            n, at, generation = self._polled.pop(key)
        except KeyError:
            raise ValueError(f"processed({key[0]}:{key[1]}@{key[2]}): not a message this consumer handed over "
                             "(or processed twice)") from None
        self._log.rows([row_of(message, self._log.name, at, generation, n, self._cfg.instance_id, CLIENT)], flush=False)

    def commit(self, message=None, offsets=None, asynchronous: bool = True):
        """As confluent_kafka's, its window logged: the offsets given, a message's next one, or (neither) the
        positions of the assignment, which is what the client commits when offsets are stored as it hands them over
        (librdkafka's default)."""
        if self._log is None:
            return self._commit(message, offsets, asynchronous)
        if offsets is not None:
            sent = list(offsets)
        elif message is not None:
            sent = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        else:
            sent = [tp for tp in super().position(super().assignment()) if tp.offset >= 0]
        return self._log.commit(sent, lambda: self._commit(message, offsets, asynchronous), asynchronous)

    def close(self) -> None:
        super().close()
        if self._log is not None:
            self._log.event("stopped")
            self._log.close()

    # inside -----------------------------------------------------------------------------------------------------------
    def _commit(self, message, offsets, asynchronous):
        kwargs = {"asynchronous": asynchronous}
        if message is not None:
            kwargs["message"] = message
        if offsets is not None:
            kwargs["offsets"] = offsets
        return super().commit(**kwargs)

    def _polled_batch(self, messages) -> None:
        self._log.consumed.flush()  # the rows of the batches before: an auto-commit may commit them at any time
        at, generation = now_ms(), current_generation(self)
        self._log.generation = generation
        for m in messages:
            error = m.error()
            if error is None:
                self._polled[(m.topic(), m.partition(), m.offset())] = (self._log.take_n(), at, generation)
            elif error.code() != KafkaError._PARTITION_EOF:
                if is_fatal(error):
                    self._log.end_on(error, None)
                else:
                    self._log.event("error", detail=error_detail(error))

    def _on_commit(self, err, partitions) -> None:
        self._log.answer(err, partitions)
        if self._their_on_commit is not None:
            self._their_on_commit(err, partitions)
