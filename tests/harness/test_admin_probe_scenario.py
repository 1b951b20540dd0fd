"""consumer_group.admin_probe (issue 22, librdkafka#4605): validated like every field, one error naming it; the
probe gets a client lane of its own (so a coordinator fault cuts it as it cuts members) and is no member."""
import re

import pytest

from harness.scenario import ADMIN_PROBE, ScenarioError, parse_scenario
from harness.zoo.runner import ZOO_DIR, select

PROBE = {"call": "describe", "every_ms": 1000, "request_timeout_ms": 3000}


def error_of(data) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data)
    return str(caught.value)


@pytest.mark.parametrize("probe, field", [
    ({"call": "list"}, "consumer_group.admin_probe.call"),
    ({"every_ms": 1000}, "consumer_group.admin_probe.call"),                      # call is required
    ({**PROBE, "every_ms": 0}, "consumer_group.admin_probe.every_ms"),
    ({**PROBE, "every_ms": "often"}, "consumer_group.admin_probe.every_ms"),
    ({**PROBE, "request_timeout_ms": 10**12}, "consumer_group.admin_probe.request_timeout_ms"),
    ({**PROBE, "request_timeout_ms": -1}, "consumer_group.admin_probe.request_timeout_ms"),
    ({**PROBE, "colour": "blue"}, "consumer_group.admin_probe.colour"),
    ("describe", "consumer_group.admin_probe"),
])
def test_a_bad_admin_probe_names_its_field(probe, field):
    message = error_of({"consumer_group": {"admin_probe": probe}})
    assert re.search(rf"(: |; ){re.escape(field)}: ", message), message
    assert "\n" not in message


def test_the_java_group_has_no_admin_probe():
    message = error_of({"consumer_group": {"client": "java", "admin_probe": PROBE}})
    assert "consumer_group.admin_probe: " in message and "client: librdkafka" in message


def test_the_probe_has_a_lane_of_its_own_and_is_no_member():
    plain = parse_scenario({})
    probed = parse_scenario({"consumer_group": {"members": 2, "admin_probe": PROBE}})
    assert ADMIN_PROBE not in plain.client_lanes()
    assert probed.client_lanes() == ("member-1", "member-2", "member-3", "member-4", "producer-1", ADMIN_PROBE)
    assert ADMIN_PROBE not in probed.facts().members
    assert probed.consumer_group.admin_probe.call == "describe"


def test_a_mixed_group_keeps_its_probe_at_the_group_level():
    scenario = parse_scenario({"consumer_group": {"members": [{"count": 1}, {"count": 1, "client": "java",
                                                                              "commit": "sync"}],
                                                  "admin_probe": PROBE}})
    assert [s.client for s in scenario.consumer_group.member_specs()] == ["librdkafka", "java"]


def test_the_4605_zoo_entry_is_open_on_the_newest_release_only():
    [(path, scenario)] = select(["librdkafka#4605"], ZOO_DIR)
    zoo = scenario.zoo
    assert zoo.status == "open" and zoo.fixed is None and zoo.fix is None
    assert zoo.releases == (("affected", "2.16.1"),)
    assert scenario.consumer_group.version == "2.16.1" and scenario.consumer_group.admin_probe is not None
    cut = scenario.faults[0]
    assert cut.kind == "proxy_cut" and cut.target == "coordinator"
    assert cut.duration_s * 1000 > scenario.consumer_group.admin_probe.request_timeout_ms
    [pred] = zoo.resolved(scenario.settings())
    assert pred["after"]["within_ms"] == 2 * scenario.consumer_group.admin_probe.request_timeout_ms
