"""Shared test settings. The `kafka_cluster` and `chaos_run` fixtures come from the project's pytest plugin."""
import os

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
# The CLIs analyse in their own process under test (and leave no analysis service behind);
# tests/analysis/test_analysis_service.py turns the service on for itself, in a folder of its own.
os.environ["KAFKA_CHAOS_ANALYSIS_SERVICE"] = "0"

pytest_plugins = ["pytester"]  # the plugin's own tests run pytest on a user's test file
