"""Shared test settings. The `kafka_cluster` and `chaos_run` fixtures come from the project's pytest plugin."""
import os

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
# The CLIs analyse in their own process under test (and leave no analysis service behind);
# tests/analysis/test_analysis_service.py turns the service on for itself, in a folder of its own.
os.environ["KAFKA_CHAOS_ANALYSIS_SERVICE"] = "0"

pytest_plugins = ["pytester"]  # the plugin's own tests run pytest on a user's test file


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, a test marked `needs_setup` (it needs what `make setup` installs: the class-data archive,
    actionlint, Chromium) fails where it would skip: a setup step that silently did not happen is a failure there."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and item.get_closest_marker("needs_setup") is not None:
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome, report.longrepr = "failed", f"under CI this may not skip: {reason}"
