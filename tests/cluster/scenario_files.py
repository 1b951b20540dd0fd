"""The project's scenario catalog (scenarios/*.yaml) as the dicts chaos_run takes: the tests that assert
what Kafka documents run the very files users run."""
from pathlib import Path

import yaml

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


# group settings that turn a classic catalog file into a KIP-848 one: the broker owns assignment and session
KIP_848 = {"protocol": "consumer", "assignor": None, "session_timeout_ms": None, "heartbeat_interval_ms": None}


def catalog(name: str, **group) -> dict:
    """scenarios/<name>.yaml, with `group` settings laid over its consumer_group."""
    scenario = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    if group:
        scenario["consumer_group"] = {**scenario.get("consumer_group", {}), **group}
    return scenario
