"""Shared test settings. The `kafka_cluster` and `chaos_run` fixtures come from the project's pytest plugin."""
import os

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

pytest_plugins = ["pytester"]  # the plugin's own tests run pytest on a user's test file
