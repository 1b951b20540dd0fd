"""Your consumer under chaos, as a pytest test: the kafka-chaos plugin alone (its `chaos_run` fixture starts a real
cluster for the session and runs a scenario file on it; the scenario's command runs app.py from this folder).

    pytest examples/python/test_app.py
"""
import pytest


@pytest.mark.slow  # make test's 30 minutes: your own program as a member runs there in tests/cluster/test_command_members_cluster.py
def test_the_app_loses_nothing_through_a_coordinator_freeze_and_a_crash(chaos_run):
    run = chaos_run("scenario.yaml")
    run.assert_valid()
    run.assert_no_loss()
    run.assert_duplicates_within_budget()


# make test's 30 minutes (the stateful run of issue 54 joined it): make test keeps output-topic mode's analysis
# (tests/analysis/test_output_mode.py) and this example in library mode; the nightly runs this and the Java twin
@pytest.mark.slow
def test_the_output_topic_alone_shows_no_loss(chaos_run):
    """Output-topic mode: judged from what the program wrote; the checks that need its events cannot run."""
    run = chaos_run("output.yaml")
    run.assert_no_loss()
    run.assert_settled()
