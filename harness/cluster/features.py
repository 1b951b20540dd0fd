"""The run's feature levels (cluster.transaction_version): set after the brokers are up, on the control lane, and read
back into cluster.json. One path for every cluster: the local image, apache/kafka's, an external one."""
from __future__ import annotations

import time

from harness.bad_input import ScenarioError
from kafkanet.features import TRANSACTION_VERSION, FeatureError, levels, set_level
from workloads.security import security_config

SETTLE_S = 30  # every broker holds the new level once it has read the controller's record of it


def apply_features(cluster, transaction_version: int | None) -> dict:
    """Set transaction.version where the scenario asks for it (ScenarioError where the brokers have no such level);
    what cluster.json records: every broker's finalized levels as the first one says them."""
    if security_config():  # the wire speaks plaintext only: a SASL/SSL cluster's levels are not read
        if transaction_version is not None:
            raise ScenarioError("cluster.transaction_version: set on the wire in plaintext, which this SASL/SSL "
                                "cluster does not take; leave it unset")
        return {}
    addresses = cluster.control_bootstrap_servers.split(",")
    held = levels(addresses[0])[0]
    if transaction_version is None or held.get(TRANSACTION_VERSION) == transaction_version:
        return held
    # what the brokers support is not asked: ApiVersions v3 lists no feature whose lowest level is 0 (KIP-1022), as
    # transaction.version's is; the brokers' own refusal says it
    try:
        set_level(addresses[0], TRANSACTION_VERSION, transaction_version, held.get(TRANSACTION_VERSION))
    except FeatureError as exc:
        raise ScenarioError(f"cluster.transaction_version: the brokers refused it ({exc})") from None
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        held_by = [levels(a)[0] for a in addresses]
        if all(h.get(TRANSACTION_VERSION) == transaction_version for h in held_by):
            return held_by[0]
        time.sleep(0.5)
    raise ScenarioError(f"cluster.transaction_version: not every broker held {transaction_version} within {SETTLE_S} s")
