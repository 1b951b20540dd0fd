"""A cluster's finalized feature levels (KIP-584), asked and set on the wire (kio builds and reads the messages): what
no client's admin API gives (confluent-kafka has no UpdateFeatures). `finalized` reads them from a broker's
ApiVersions v3 answer; `set_level` asks a broker for an UpdateFeatures v1 (the broker forwards it to the active
controller): an upgrade, or a safe downgrade (`transaction.version` 2 to 1 is one, KIP-890)."""
from __future__ import annotations

from kafkanet.group_wire import ask, ask_raw

API_VERSIONS, UPDATE_FEATURES = 18, 57
UPGRADE, SAFE_DOWNGRADE = 1, 2  # UpdateFeatures' upgrade_type
TRANSACTION_VERSION = "transaction.version"
TRANSACTION_VERSION_FROM = (4, 0)  # the release that has it (KIP-890); clusters formatted at 4.0 or later hold 2


class FeatureError(RuntimeError):
    """The broker refused the update (its error named), or did not answer."""


def finalized(address: str, timeout_s: float = 10) -> dict[str, int]:
    """The feature levels the broker at host:port holds finalized (name -> max_version_level)."""
    return levels(address, timeout_s)[0]


def levels(address: str, timeout_s: float = 10) -> tuple[dict[str, int], dict[str, int]]:
    """(finalized, supported): the levels the broker holds finalized, and the highest it supports, by feature."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest
    from kio.schema.api_versions.v3.response import ApiVersionsResponse
    from kio.serial import entity_reader
    raw = ask_raw(address, API_VERSIONS, 3, ApiVersionsRequest(client_software_name="kafka-chaos",
                                                               client_software_version="1"), timeout_s)
    # an ApiVersions answer's header is never flexible (KIP-511): its body starts right after the correlation id
    response, _ = entity_reader(ApiVersionsResponse)(memoryview(raw), 0)
    if response.error_code.value != 0:
        raise FeatureError(f"ApiVersions: {response.error_code.name}")
    return ({f.name: int(f.max_version_level) for f in response.finalized_features},
            {f.name: int(f.max_version) for f in response.supported_features})


def set_level(address: str, feature: str, level: int, current: int | None, timeout_s: float = 30) -> None:
    """Set `feature` to `level` (an upgrade above `current`, else a safe downgrade); FeatureError if refused."""
    from kio.schema.update_features.v1.request import FeatureUpdateKey, UpdateFeaturesRequest
    from kio.static.primitive import i8, i16
    kind = UPGRADE if current is None or level > current else SAFE_DOWNGRADE
    request = UpdateFeaturesRequest(feature_updates=(FeatureUpdateKey(
        feature=feature, max_version_level=i16(level), upgrade_type=i8(kind)),))
    response = ask(address, UPDATE_FEATURES, 1, request, timeout_s)
    problems = [f"{response.error_code.name}: {response.error_message or ''}"] if response.error_code.value else []
    problems += [f"{r.feature}: {r.error_code.name} {r.error_message or ''}" for r in response.results
                 if r.error_code.value]
    if problems:
        raise FeatureError(f"UpdateFeatures {feature}={level}: " + "; ".join(p.strip() for p in problems))
