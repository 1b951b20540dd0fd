"""server.properties for one KRaft node, with every listener routed the way the harness needs.

Listeners on broker N:
  CLIENT      workload clients; advertised as the host address of Toxiproxy proxy kafka-N-client
  CONTROL     the harness's own admin lane: the broker's port published on a loopback port, not through
              Toxiproxy, never faulted (what the harness sees of the cluster does not cross the fault injector)
  INTERNAL    replication between brokers, through proxy kafka-N-internal
  CONTROLLER  the KRaft quorum, through proxy kafka-N-controller
  LANE_i      one per workload client (member-1, ..., producer-1): advertised as the host address of
              that client's own proxy kafka-N-<client>, so one client's traffic can be cut or slowed alone
Because a broker answers metadata and FindCoordinator with the addresses of the listener a client
came in on, every request of a workload client stays on the lane it bootstrapped on, i.e. goes
through that lane's Toxiproxy proxies.
"""
from __future__ import annotations

from dataclasses import dataclass

CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT, CONTROL_PORT = 9092, 9093, 9094, 9095
LANE_PORT = 9100  # + the lane's index
DATA_DIR = "/tmp/kafka-data"  # writable in our image and in apache/kafka (which runs as appuser)
BOOTSTRAP_CHECKPOINT = "/opt/kafka/bootstrap/bootstrap.checkpoint"  # only in the project's image
# Added to the image's own JVM options (KAFKA_OPTS, which every kafka-run-class.sh appends): C1 only. Three brokers
# start side by side on a machine of two cores, where C2's compiler threads take the CPU the start-up needs:
# 6.2 -> 4.8 s to a ready cluster, and no loss of throughput at the rates a run produces (docs/benchmarks-history.md,
# issue 13).
JVM_OPTS = "-XX:TieredStopAtLevel=1"


def lane_listener(index: int) -> str:
    return f"LANE_{index}"


@dataclass(frozen=True)
class Lanes:
    """Where the proxies of one broker listen (inside the network) and what the host sees."""
    client_host_address: str      # 127.0.0.1:port published from the Toxiproxy container
    control_host_address: str     # 127.0.0.1:port published from the broker's own container
    internal_proxy_address: str   # toxiproxy:port
    controller_proxy_address: str
    client_lanes: tuple[str, ...] = ()  # host address of this broker's proxy on each per-client lane, by lane index


def render(node_id: int, lanes: Lanes, voters: str, overrides: dict[str, object] | None = None) -> str:
    props: dict[str, object] = {
        "node.id": node_id,
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "INTERNAL",
        "listeners": ",".join([f"CLIENT://0.0.0.0:{CLIENT_PORT}", f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
                               f"INTERNAL://0.0.0.0:{INTERNAL_PORT}", f"CONTROL://0.0.0.0:{CONTROL_PORT}"]
                              + [f"{lane_listener(i)}://0.0.0.0:{LANE_PORT + i}" for i in range(len(lanes.client_lanes))]),
        "advertised.listeners": ",".join([f"CLIENT://{lanes.client_host_address}", f"INTERNAL://{lanes.internal_proxy_address}",
                                          f"CONTROL://{lanes.control_host_address}"]
                                         + [f"{lane_listener(i)}://{a}" for i, a in enumerate(lanes.client_lanes)]),
        "listener.security.protocol.map": ",".join(f"{name}:PLAINTEXT" for name in
                                                   ["CLIENT", "CONTROLLER", "INTERNAL", "CONTROL"]
                                                   + [lane_listener(i) for i in range(len(lanes.client_lanes))]),
        "log.dirs": DATA_DIR,
        "num.partitions": 1,
        "default.replication.factor": 3,
        "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3,
        "offsets.topic.num.partitions": 10,
        "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "unclean.leader.election.enable": "false",
        # The controller's own preferred-leader rebalance (every 300 s) moves leaders, and so a group's
        # coordinator, at a moment no scenario chose: a restarted broker got its leadership back in the middle
        # of a later, unrelated run. Leaders move here only by a fault (preferred_leader_election among them)
        # or by reset_faults between runs; a scenario's cluster.broker_config can turn it back on.
        "auto.leader.rebalance.enable": False,
        "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.consumer.session.timeout.ms": 10000,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.min.session.timeout.ms": 1000,
        # KIP-1071 Streams groups (on by default on a cluster formatted at 4.2 or later): the same session and
        # heartbeat as KIP-848 members, and no initial delay, as for classic groups
        "group.streams.min.session.timeout.ms": 1000,
        "group.streams.min.heartbeat.interval.ms": 500,
        "group.streams.session.timeout.ms": 10000,
        "group.streams.heartbeat.interval.ms": 1000,
        "group.streams.initial.rebalance.delay.ms": 0,
    }
    props.update(overrides or {})
    return "".join(f"{key}={_value(value)}\n" for key, value in props.items())


def _value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def startup_script() -> str:
    """The container command: write the config the harness rendered, format an empty data directory, start.
    Formatting is a JVM of its own (seconds of CPU); an image that carries a formatted node's
    bootstrap.checkpoint (images/kafka/bin/prepare-fast-start.sh) is formatted by copying it and writing
    meta.properties, which is all `kafka-storage.sh format` writes for a node of a static quorum."""
    meta = ("printf 'version=1\\nnode.id=%s\\ndirectory.id=%s\\ncluster.id=%s\\n' "
            '"$(sed -n "s/^node.id=//p" /tmp/server.properties)" '
            "\"$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')\" \"$KAFKA_CHAOS_CLUSTER_ID\"")
    return (
        "set -e; "
        'printf "%s" "$KAFKA_CHAOS_SERVER_PROPERTIES" > /tmp/server.properties; '
        f"if [ ! -f {DATA_DIR}/meta.properties ]; then "
        f"if [ -f {BOOTSTRAP_CHECKPOINT} ]; then mkdir -p {DATA_DIR} && cp {BOOTSTRAP_CHECKPOINT} {DATA_DIR}/ && "
        f"{meta} > {DATA_DIR}/meta.properties; "
        'else /opt/kafka/bin/kafka-storage.sh format -t "$KAFKA_CHAOS_CLUSTER_ID" -c /tmp/server.properties; fi; '
        "fi; "
        "exec /opt/kafka/bin/kafka-server-start.sh /tmp/server.properties"
    )
