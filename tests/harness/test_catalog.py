"""The scenario catalog: every file valid, each saying what it checks and where Kafka documents it."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.scenario import catalog

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
ENTRIES = catalog(SCENARIOS)


@pytest.mark.parametrize("path, scenario", ENTRIES, ids=[p.name for p, _ in ENTRIES])
def test_each_catalog_file_is_valid_described_and_names_its_source(path, scenario):
    assert scenario.description, f"{path.name}: no description (the line `kafka-chaos scenarios` prints)"
    assert scenario.name == path.stem or path.stem == "default"
    comment = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    assert re.search(r"KIP-\d+|Kafka documentation", comment), f"{path.name}: its comment names no KIP or document"
    assert "Expected:" in comment, f"{path.name}: its comment does not say what to expect"


def test_the_scenarios_command_lists_every_file_with_its_line():
    result = subprocess.run([sys.executable, "-m", "harness.cli", "scenarios"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(ENTRIES)
    for (path, scenario), line in zip(ENTRIES, lines):
        assert line.startswith(path.name) and line.endswith(scenario.description)


def test_a_bad_file_in_the_folder_is_one_error_naming_it(tmp_path):
    (tmp_path / "broken.yaml").write_text("consumer_group:\n  members: 0\n")
    result = subprocess.run([sys.executable, "-m", "harness.cli", "scenarios", "--dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "broken.yaml" in result.stderr and "consumer_group.members" in result.stderr, result.stderr
