"""The Java member program (issue 39) on the real cluster: one host JVM runs three members of one group, for each
group protocol. Every record is consumed and logged as the run-directory contract says, with real generations (the
classic generation, the KIP-848 member epoch) in the rows and the `assigned` events. A member crashed through the
host's control file goes down as a killed process: the request-aware proxy, which all three members' traffic crosses
(one lane for the host), sees no LeaveGroup, no leave heartbeat (epoch -1 or -2), no commit and no heartbeat of it
after the crash, and the group lets it go only when its session expires. Taken off the list, it joins again under
its name; SIGTERM stops every member with a leave, a `stopped` event each and exit code 0.
(Without a broker: tests/workloads/test_java_host_unit.py.)"""
import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
from polling import read_jsonl, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from harness.releases.client_jars import java_client
from kafkanet.clock import now_ms
from kafkanet.rpc_proxy import Rule, request_facts
from workloads.config import ClientRelease, HostConfig, MemberConfig, ProcessingConfig, encode
from workloads.control import control_path, host_ack_path, host_control_path, write_atomically
from workloads.java_build import member_jar
from workloads.java_host import command_line

pytestmark = pytest.mark.cluster
LANE = "member-7"  # one of the session cluster's member lanes that no 3-member chaos_run uses
NAMES = ["member-1", "member-2", "member-3"]
ROW_FIELDS = ["topic", "partition", "offset", "member", "consumed_at_ms", "key", "producer_id", "seq", "instance_id",
              "generation", "client", "n"]
OBSERVED = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "ConsumerGroupHeartbeat")
# the group's session: classic, the member's own session.timeout.ms; KIP-848, the brokers' group.consumer.session.timeout.ms
SESSION_MS = {"classic": 6000, "consumer": 10000}
# the group coordinator's log (GroupMetadataManager, Kafka 4.3.1) when a member's session expires, and when it leaves
EXPIRED = {"classic": "has failed, removing it from the group", "consumer": "because the member session expired"}
LEFT = {"classic": "has left group", "consumer": "left the consumer group"}




class Host:
    """One host JVM and what can be read of it: its members' logs, its ack, the group as the brokers describe it."""

    def __init__(self, cluster, tmp_path: Path, protocol: str, topic: str, group: str) -> None:
        self.run_dir, self.group = tmp_path / "run", group
        classpath, log4j = java_client(cluster.image)
        members = [MemberConfig(member=name, run_dir=str(self.run_dir), client="java-member",
                                release=ClientRelease(classpath=classpath, log4j_config=str(log4j) if log4j else None),
                                bootstrap_servers=cluster.lane_bootstrap_servers(LANE), group_id=group, topics=[topic],
                                pattern=None, metadata_refresh_ms=None, protocol=protocol,
                                assignor="cooperative-sticky" if protocol == "classic" else None,
                                remote_assignor="uniform" if protocol == "consumer" else None,
                                session_timeout_ms=SESSION_MS["classic"], heartbeat_interval_ms=500,
                                max_poll_interval_ms=300000, commit="sync", auto_commit_interval_ms=None,
                                processing=ProcessingConfig(), batch_size=50, host="host-1",
                                hosted_settings={"fetch.max.bytes": 4 << 20})
                   for name in NAMES]
        self.config = HostConfig(host="host-1", run_dir=str(self.run_dir), members=members)
        self.log = tmp_path / "host.log"
        with open(self.log, "wb") as log:
            self.jvm = subprocess.Popen(command_line(self.config, member_jar()), env={**os.environ, **encode(self.config)},
                                        stdout=log, stderr=subprocess.STDOUT)
        self.admin = AdminClient({"bootstrap.servers": cluster.control_bootstrap_servers})

    def events(self, name: str) -> list[dict]:
        return read_jsonl(self.run_dir / "events" / f"{name}.jsonl")

    def rows(self, name: str | None = None) -> list[dict]:
        return [r for n in ([name] if name else NAMES) for r in read_jsonl(self.run_dir / "consumed" / f"{n}.jsonl")]

    def ack(self) -> dict:
        try:
            return json.loads(host_ack_path(self.run_dir, "host-1").read_text())
        except (OSError, ValueError):
            return {}

    def ask(self, crashed: list[str]) -> None:
        write_atomically(host_control_path(self.run_dir, "host-1"), {"crashed": crashed})

    def described(self) -> tuple[str, list[str]] | None:
        try:
            d = self.admin.describe_consumer_groups([self.group], request_timeout=5)[self.group].result()
        except Exception:
            return None
        return d.state.name, sorted(m.client_id for m in d.members)

    def without(self, name: str) -> int | None:
        """When the group was first described without the member (None: not yet, or not described)."""
        described = self.described()
        return now_ms() if described is not None and name not in described[1] else None

    def consumed_offsets(self) -> set[tuple[int, int]]:
        return {(r["partition"], r["offset"]) for r in self.rows()}


def produce(cluster, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.control_bootstrap_servers, "enable.idempotence": True})
    for seq in range(first, first + count):
        producer.produce(topic, key=f"k{seq % 5}", value=f"p:{seq}")
    assert producer.flush(30) == 0


@pytest.mark.parametrize("protocol", ["classic", pytest.param("consumer", marks=pytest.mark.slow)])  # make test's 30 minutes
def test_hosted_java_members_log_the_contract_and_one_crashes_without_a_leave(kafka_cluster, tmp_path, protocol):
    if not hasattr(kafka_cluster, "proxied_lanes"):
        pytest.skip("needs the harness's own cluster: its lanes through the request-aware proxy, its brokers' logs")
    kafka_cluster.reset_faults()
    suffix = secrets.token_hex(3)
    topic, group = f"java-host-{protocol}-{suffix}", f"java-host-{protocol}-{suffix}"
    kafka_cluster.create_topic(topic, 6, 3)
    seen: list[dict] = []

    def observe(rule, header, payload):
        seen.append({"at_ms": now_ms(), "api": rule.api, "member": header.client_id, **request_facts(payload)})

    with kafka_cluster.proxied_lanes([LANE]) as proxy:
        for api in OBSERVED:
            proxy.add_rule(Rule(api=api, action="observe", on_hit=observe))
        host = Host(kafka_cluster, tmp_path, protocol, topic, group)
        try:
            produce(kafka_cluster, topic, 0, 300)
            wait_for(lambda: host.described() == ("STABLE", NAMES) and len(host.consumed_offsets()) == 300, 45,
                     "three members stable and every record consumed")
            check_rows_and_events(host, protocol)

            # a crash, as a killed process: nothing more from it, neither on the wire nor in its logs
            crashed_at = now_ms()
            host.ask(["member-2"])
            wait_for(lambda: host.ack().get("crashed") == ["member-2"], 10, "the crash acked")
            acked_at = now_ms()
            down = host.ack()["down_at_ms"]["member-2"]  # issue 51: the crash's real stop, as the host says
            assert crashed_at <= down <= acked_at, (crashed_at, down, acked_at)
            gone = wait_for(lambda: host.without("member-2"), SESSION_MS[protocol] / 1000 + 15, "the group lets member-2 go")
            after = [s for s in seen if s["member"] == "member-2" and s["at_ms"] >= crashed_at]
            leaves = [s for s in after if s["api"] == "LeaveGroup" or (s["api"] == "ConsumerGroupHeartbeat"
                                                                        and s.get("generation", 0) < 0)]
            assert not leaves, f"member-2 left the group as it crashed: {leaves}"
            assert not [s for s in after if s["api"] == "OffsetCommit"], after
            assert not [s for s in after if s["at_ms"] > down], f"member-2 sent requests after its crash: {after}"
            # the group noticed only when the member's session expired (a leave is answered at once)
            assert gone - acked_at >= SESSION_MS[protocol] - 2500, f"member-2 gone {gone - acked_at} ms after its crash"
            # (an event between the ask and the crash is the member's last act while alive)
            assert [e["kind"] for e in host.events("member-2") if e["ts_ms"] > acked_at] == []
            # and the group coordinator's own account: the member's session ran out, it never left
            member_id = [e for e in host.events("member-2") if e["kind"] == "assigned"][-1]["member_id"]
            said = [line for b in kafka_cluster.brokers for line in b.logs().splitlines() if member_id in line]
            assert any(EXPIRED[protocol] in line for line in said), said
            assert not any(LEFT[protocol] in line for line in said), said
            rows_before_restart = len(host.rows("member-2"))

            # taken off the list: a fresh consumer under the same name, its log going on
            host.ask([])
            wait_for(lambda: "member-2" in host.ack().get("running", []), 10, "member-2 running again")
            wait_for(lambda: host.described() == ("STABLE", NAMES), 30, "member-2 back in a stable group")
            produce(kafka_cluster, topic, 300, 300)
            wait_for(lambda: len(host.consumed_offsets()) == 600, 30, "every record consumed")
            # after the ack: an event between the ask and the crash (a rebalance callback) is the old consumer's
            again = [e for e in host.events("member-2") if e["ts_ms"] > acked_at]
            assert again[0]["kind"] == "started" and again[0]["client"] == "java-member"
            assert any(e["kind"] == "assigned" and e["generation"] >= 1 and e["partitions"] for e in again), again
            restarted_rows = host.rows("member-2")[rows_before_restart:]
            assert [r["n"] for r in host.rows("member-2")] == list(range(len(host.rows("member-2"))))
            assert restarted_rows and all(r["consumed_at_ms"] > acked_at for r in restarted_rows)
        finally:
            stop_at = now_ms()
            host.jvm.send_signal(signal.SIGTERM)
            code = host.jvm.wait(60)
        assert code == 0, host.log.read_text()[-3000:]
        assert [host.events(n)[-1]["kind"] for n in NAMES] == ["stopped"] * 3
        # a clean stop does leave: the proxy saw each member's leave
        left = {s["member"] for s in seen if s["at_ms"] >= stop_at and
                (s["api"] == "LeaveGroup" or (s["api"] == "ConsumerGroupHeartbeat" and s.get("generation") == -1))}
        assert left == set(NAMES), [s for s in seen if s["at_ms"] >= stop_at]
    check_commits(host)


def check_rows_and_events(host: Host, protocol: str) -> None:
    rows = host.rows()
    assert all(list(r) == ROW_FIELDS for r in rows), rows[0]
    assert all(r["client"] == "java-member" and r["instance_id"] is None and r["generation"] >= 1 for r in rows)
    assert all(r["producer_id"] == "p" and r["key"] == f"k{r['seq'] % 5}" for r in rows)
    assert sorted({r["seq"] for r in rows}) == list(range(300))
    for name in NAMES:
        mine = host.rows(name)
        assert [r["n"] for r in mine] == list(range(len(mine)))  # one sequence per member, in consumption order
        events = host.events(name)
        started = events[0]
        assert {k: started[k] for k in ("kind", "client", "protocol", "commit", "host", "client_version")} == \
            {"kind": "started", "client": "java-member", "protocol": protocol, "commit": "sync", "host": "host-1",
             "client_version": "4.3.1"}
        assigned = [e for e in events if e["kind"] == "assigned"]
        assert assigned and all(e["generation"] >= 1 and e["member_id"] for e in assigned), assigned
        # each row carries the generation its member was in when it logged the row: the last assignment's or later
        for r in mine:
            before = [e["generation"] for e in assigned if e["ts_ms"] <= r["consumed_at_ms"]]
            assert before and r["generation"] >= before[-1], (r, before)


def check_commits(host: Host) -> None:
    """Every commit_sent of a life is answered with its commit_id (a crashed life may leave one unanswered), and
    a batch is in the log before its commit is sent."""
    for name in NAMES:
        lives, life = [], []
        for e in host.events(name):
            if e["kind"] == "started" and life:
                lives.append(life)
                life = []
            life.append(e)
        lives.append(life)
        for life in lives:
            sent = {e["commit_id"]: e for e in life if e["kind"] == "commit_sent"}
            answered = {e["commit_id"] for e in life if e["kind"] in ("committed", "commit_failed")}
            assert len(sent) - len(answered & set(sent)) <= 1, (name, sent.keys(), answered)
        logged_at = {(f"{r['topic']}:{r['partition']}", r["offset"]): r["consumed_at_ms"] for r in host.rows(name)}
        for e in host.events(name):
            if e["kind"] == "commit_sent":  # each committed offset's last record logged before the commit left
                assert all(logged_at.get((tp, offset - 1), e["ts_ms"] + 1) <= e["ts_ms"]
                           for tp, offset in e["offsets"].items()), e
