"""server.properties for one KRaft node, with every listener routed the way the harness needs.

Listeners on broker N:
  CLIENT      workload clients; advertised as the host address of Toxiproxy proxy kafka-N-client
  CONTROL     the harness's own admin lane; also through Toxiproxy (kafka-N-control), never faulted
  INTERNAL    replication between brokers, through proxy kafka-N-internal
  CONTROLLER  the KRaft quorum, through proxy kafka-N-controller
Because a broker answers metadata and FindCoordinator with the addresses of the listener a client
came in on, every request of a workload client stays on the CLIENT lane, i.e. goes through Toxiproxy.
"""
from __future__ import annotations

from dataclasses import dataclass

CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT, CONTROL_PORT = 9092, 9093, 9094, 9095
DATA_DIR = "/tmp/kafka-data"  # writable in our image and in apache/kafka (which runs as appuser)


@dataclass(frozen=True)
class Lanes:
    """Where the proxies of one broker listen (inside the network) and what the host sees."""
    client_host_address: str      # 127.0.0.1:port published from the Toxiproxy container
    control_host_address: str
    internal_proxy_address: str   # toxiproxy:port
    controller_proxy_address: str


def render(node_id: int, lanes: Lanes, voters: str, overrides: dict[str, object] | None = None) -> str:
    props: dict[str, object] = {
        "node.id": node_id,
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "INTERNAL",
        "listeners": f"CLIENT://0.0.0.0:{CLIENT_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT},"
                     f"INTERNAL://0.0.0.0:{INTERNAL_PORT},CONTROL://0.0.0.0:{CONTROL_PORT}",
        "advertised.listeners": f"CLIENT://{lanes.client_host_address},INTERNAL://{lanes.internal_proxy_address},"
                                f"CONTROL://{lanes.control_host_address}",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROL:PLAINTEXT",
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
        "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.consumer.session.timeout.ms": 10000,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.min.session.timeout.ms": 1000,
    }
    props.update(overrides or {})
    return "".join(f"{key}={_value(value)}\n" for key, value in props.items())


def _value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def startup_script() -> str:
    """The container command: write the config the harness rendered, format once, start."""
    return (
        "set -e; "
        'printf "%s" "$KAFKA_CHAOS_SERVER_PROPERTIES" > /tmp/server.properties; '
        f"if [ ! -f {DATA_DIR}/meta.properties ]; then "
        '/opt/kafka/bin/kafka-storage.sh format -t "$KAFKA_CHAOS_CLUSTER_ID" -c /tmp/server.properties; fi; '
        "exec /opt/kafka/bin/kafka-server-start.sh /tmp/server.properties"
    )
