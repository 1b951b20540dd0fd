"""An application of yours as a consumer-group member under kafka-chaos: library mode (workloads/app.py).

It reads its topics in batches of up to 500 records (a Java consumer's max.poll.records), works 200 ms on each
batch, and commits what it worked on after each batch and when partitions are taken from it. The only lines that
are kafka-chaos's: the consumer comes from `app.Consumer` instead of `confluent_kafka.Consumer`, and
`consumer.processed(record)` says a record's work is done.
Outside a run it is an ordinary consumer: `python app.py --bootstrap-servers HOST:PORT --topic T --group G`.

Two bugs can be planted on purpose (the harness must catch them):
  --bug commit-first  commits the position after each poll and works on those records after the next poll, so it
                      always holds records committed but not yet processed (a crash loses them);
  --bug seek-past     seeks each partition it is given to its committed offset + 1, skipping one record each time.
"""
from __future__ import annotations

import argparse
import signal
import time

from confluent_kafka import KafkaException, Producer, TopicPartition

from workloads import app

WORK_PER_BATCH_S = 0.2
MAX_BATCH = 500


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap-servers", default="localhost:9092", help="outside a run (a run sets its own)")
    parser.add_argument("--group", default="example-app", help="outside a run (a run sets its own)")
    parser.add_argument("--topic", action="append", help="outside a run (a run subscribes to its own topics)")
    parser.add_argument("--output", metavar="TOPIC", help="write each record worked on to TOPIC, naming it in headers "
                        "(in-topic, in-partition, in-offset, in-member), before its offset is committed")
    parser.add_argument("--bug", choices=("commit-first", "seek-past"), help="plant a bug on purpose")
    return parser.parse_args()


class Application:
    def __init__(self, args: argparse.Namespace) -> None:
        self.bug = args.bug
        self.stopping = False
        self.done: dict[tuple[str, int], int] = {}  # the next offset to commit, for the work done
        self.consumer = app.Consumer({"bootstrap.servers": args.bootstrap_servers, "group.id": args.group,
                                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.consumer.subscribe(app.topics(args.topic or ["example"]), on_assign=self.on_assign,
                                on_revoke=self.on_revoke, on_lost=self.on_lost)
        self.output, self.member = args.output, app.member("example-app")
        self.producer = Producer(app.producer_settings({"bootstrap.servers": args.bootstrap_servers})) \
            if args.output else None

    def on_assign(self, consumer, partitions) -> None:
        for p in partitions:  # work done in an earlier ownership is the committed offset's to say, not ours
            self.done.pop((p.topic, p.partition), None)
        if self.bug == "seek-past":
            committed = consumer.committed(partitions, timeout=10)
            for p, c in zip(partitions, committed):
                if c.offset >= 0:
                    p.offset = c.offset + 1
            try:  # an eager assignor's whole assignment; a cooperative one (or KIP-848) adds to it
                consumer.assign(partitions)
            except KafkaException:
                consumer.incremental_assign(partitions)

    def on_revoke(self, consumer, partitions) -> None:
        """Commit what was worked on in the partitions taken away, before another member starts on them."""
        self.commit({(p.topic, p.partition) for p in partitions})

    def on_lost(self, consumer, partitions) -> None:
        """Partitions lost (the group went on without this member): too late to commit; another member has them."""
        for p in partitions:
            self.done.pop((p.topic, p.partition), None)

    def work(self, batch) -> None:
        if not batch:
            return
        time.sleep(WORK_PER_BATCH_S)
        for record in batch:
            if self.producer is not None:
                self.producer.produce(self.output, record.value(), record.key(), headers=[
                    ("in-topic", record.topic()), ("in-partition", str(record.partition())),
                    ("in-offset", str(record.offset())), ("in-member", self.member)])
            self.consumer.processed(record)
            self.done[(record.topic(), record.partition())] = record.offset() + 1
        if self.producer is not None and self.producer.flush(30) > 0:
            raise SystemExit("the output was not written within 30 s")  # never commit what was not written

    def commit(self, partitions=None) -> None:
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.done.items() if partitions is None or (t, p) in partitions]
        if offsets:
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except Exception as exc:  # a rebalance under way: the next commit carries these offsets again
                print(f"commit failed: {exc}", flush=True)
                return
        for tp in offsets:
            self.done.pop((tp.topic, tp.partition), None)

    def run(self) -> None:
        held = []  # --bug commit-first: the records of the poll before
        while not self.stopping:
            batch = [m for m in self.consumer.consume(MAX_BATCH, timeout=1.0) if m.error() is None]
            if self.bug == "commit-first":
                if batch:  # the position committed: past records not yet worked on, held until the next batch
                    self.consumer.commit(asynchronous=False)
                    self.work(held)
                    held = batch
            else:
                self.work(batch)
                self.commit()
        self.consumer.close()
        if self.producer is not None:
            self.producer.flush(30)


def main() -> None:
    application = Application(arguments())

    def stop(signum, frame):
        application.stopping = True

    signal.signal(signal.SIGTERM, stop)  # the harness's member_leave: close the consumer, leave the group
    signal.signal(signal.SIGINT, stop)
    application.run()


if __name__ == "__main__":
    main()
