"""The bug zoo (scenarios/zoo/, issue 12): each file valid, and its opening comment names the upstream issue, the
affected and fixed releases, the mechanism and what to expect, and pins the affected release."""
import re
from pathlib import Path

import pytest

from harness.scenario import catalog

ZOO = catalog(Path(__file__).resolve().parents[2] / "scenarios" / "zoo")


def test_the_zoo_has_files():
    assert ZOO


@pytest.mark.parametrize("path, scenario", ZOO, ids=[p.name for p, _ in ZOO])
def test_each_zoo_file_says_what_bug_where_and_what_to_expect(path, scenario):
    comment = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    for heading in ("Upstream:", "Affected:", "Fixed in:", "Mechanism:", "Expected:"):
        assert heading in comment, f"{path.name}: no {heading!r} in its comment"
    affected = re.search(r"Affected: \S+ \S+ (\d+\.\d+\.\d+)", comment)
    assert affected and scenario.consumer_group.version == affected[1], f"{path.name}: does not pin the affected release"
    assert scenario.name == path.stem and scenario.description
