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


def pytest_sessionfinish(session, exitstatus):
    """The fault families this session really ran (harness/nightly/families.py), read from the run directories it
    left under its temporary folder and --keep-runs: written to $KAFKA_CHAOS_FAMILIES; with
    $KAFKA_CHAOS_REQUIRE_ALL_FAMILIES=1 (`make test`) a family that did not run fails the session, naming it."""
    path = os.environ.get("KAFKA_CHAOS_FAMILIES")
    if not path or not hasattr(session.config, "_tmp_path_factory"):
        return
    from harness.nightly.families import families_under, write_ledger
    keep = session.config.getoption("keep_runs", None)
    ran = families_under(session.config._tmp_path_factory.getbasetemp(), keep)
    ledger = write_ledger(path, ran, os.environ.get("KAFKA_CHAOS_FAMILIES_SELECTION", "all"))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    line = f"fault families run: {len(ledger['ran'])}; not run: {', '.join(ledger['not_run']) or 'none'} ({path})"
    if reporter is not None:
        reporter.write("\n")  # after the progress dots, which leave the line open
        reporter.write_line(line)
    if ledger["not_run"] and os.environ.get("KAFKA_CHAOS_REQUIRE_ALL_FAMILIES") == "1" and session.exitstatus == 0:
        session.exitstatus = 1
        if reporter is not None:
            reporter.write_line("FAILED: every fault family must run in `make test` at least once (tests/cluster/"
                                "test_fault_families.py has a short run of each)", red=True)
