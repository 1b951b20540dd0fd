"""The Java app under chaos (slow: its first start builds it with Maven). The kafka-chaos plugin alone.

    pytest examples/java/test_java_app.py
"""
import pytest


@pytest.mark.slow
def test_the_java_app_loses_nothing_through_a_coordinator_freeze_and_a_crash(chaos_run):
    run = chaos_run("scenario.yaml")
    run.assert_valid()
    run.assert_no_loss()
    run.assert_duplicates_within_budget()


@pytest.mark.slow
def test_the_java_apps_output_topic_alone_shows_no_loss(chaos_run):
    run = chaos_run("output.yaml")
    run.assert_no_loss()
    run.assert_settled()
