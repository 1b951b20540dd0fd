"""The nightly matrix: every assignor × membership × protocol under the default scenario's one fault (the
group's coordinator frozen for 12 s, like a long GC pause), with what Kafka promises in every configuration
asserted through the plugin's own helpers. `make nightly` keeps the runs and writes the comparison table and the
trend page from them."""
import pytest

from scenario_files import KIP_848, catalog

CLASSIC = [(client, assignor, static) for client, assignor in (("librdkafka", "range"), ("librdkafka", "roundrobin"),
                                                                  ("librdkafka", "cooperative-sticky"), ("java", "sticky"))
           for static in (False, True)]
CONSUMER = [("librdkafka", None, static) for static in (False, True)]


@pytest.mark.slow
@pytest.mark.parametrize("client, assignor, static", CLASSIC + CONSUMER,
                         ids=lambda v: {None: "consumer-protocol", True: "static", False: "dynamic"}.get(v, v))
def test_matrix_coordinator_freeze(chaos_run, client, assignor, static):
    group = {"client": client, "static_membership": static}
    group.update(KIP_848 if assignor is None else {"assignor": assignor})
    run = chaos_run(catalog("default", **group))
    assert not run.errors and run.drained
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    run.assert_time_to_stable(below_s=90)
