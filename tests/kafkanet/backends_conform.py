"""Read by mypy, never run (tests/kafkanet/test_typing.py): every backend's objects handed where a fault kind
expects the protocols of faults/backend.py. A backend that lacks a method, or gives one another signature,
fails the type check here, before any cluster starts."""
from __future__ import annotations

import random

from faults.backend import BrokerHandle, ClusterHandle, MemberHandle, PoolHandle, TopicsHandle
from faults.context import FaultContext
from faults.timeline import FaultTimeline
from harness.cluster.brokers import Broker
from harness.cluster.external import ExternalBroker, ExternalCluster
from harness.cluster.kafka import KafkaCluster
from harness.run import MemberPool, RunTopics
from kafkanet.rpc_proxy import RpcProxy
from workloads.services import WorkloadProcess


def container_cluster(cluster: KafkaCluster) -> ClusterHandle:
    return cluster


def container_broker(broker: Broker) -> BrokerHandle:
    return broker


def external_cluster(cluster: ExternalCluster) -> ClusterHandle:
    return cluster


def external_broker(broker: ExternalBroker) -> BrokerHandle:
    return broker


def member(process: WorkloadProcess) -> MemberHandle:
    return process


def pool(members: MemberPool) -> PoolHandle:
    return members


def topics(run_topics: RunTopics) -> TopicsHandle:
    return run_topics


def context_as_the_run_builds_it(cluster: KafkaCluster | ExternalCluster, members: MemberPool, run_topics: RunTopics,
                                 timeline: FaultTimeline, proxy: RpcProxy | None) -> FaultContext:
    """harness/run.py's nemesis_for, on either backend."""
    return FaultContext(cluster, members.processes, timeline, random.Random(7), "group", "topic",
                        pool=members, topics=run_topics, rpc_proxy=proxy)
