"""Which member a client.id belongs to: the rpc rules and cuts (kafkanet/rpc_proxy.py), the analysis of group-states
and coordinator.log (analysis/rundir/coordinator_log.py) read it by this one rule."""
from __future__ import annotations


def same_client(name: str | None, client_id: str | None) -> bool:
    """Whether a request's client.id is the member ``name``'s: the name itself, or the name followed by `-` (a Kafka
    Streams instance appends `-StreamThread-N-consumer` and the like to each of its clients'); `member-2` is never
    `member-20-...`."""
    return name is not None and client_id is not None and (client_id == name or client_id.startswith(name + "-"))


def member_of(client_id: str, members) -> str | None:
    """The member of ``members`` (names) whose client.id this is; None: none of them."""
    return next((m for m in members if same_client(m, client_id)), None)
