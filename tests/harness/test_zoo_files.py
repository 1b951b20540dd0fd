"""The bug zoo (scenarios/zoo/, issue 12): each file valid, and its opening comment names the upstream issue, the
affected and fixed releases, the mechanism and what to expect, and pins the affected release."""
from pathlib import Path

import pytest

from harness.scenario import catalog, parse_scenario, unique_names
from harness.zoo import on_release

ZOO = catalog(Path(__file__).resolve().parents[2] / "scenarios" / "zoo")


def test_the_zoo_has_files():
    assert ZOO


@pytest.mark.parametrize("path, scenario", ZOO, ids=[p.name for p, _ in ZOO])
def test_each_zoo_file_says_what_bug_where_and_what_to_expect(path, scenario):
    comment = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    for heading in ("Upstream:", "Affected:", "Fixed in:", "Mechanism:", "Expected:"):
        assert heading in comment, f"{path.name}: no {heading!r} in its comment"
    zoo = scenario.zoo
    assert zoo is not None, f"{path.name}: no zoo: block (bug, upstream, fix, affected, fixed, expect)"
    assert zoo.affected in comment.split("Affected:")[1].split("\n")[0], f"{path.name}: the comment's affected release"
    assert zoo.fixed in comment.split("Fixed in:")[1].split("\n")[0], f"{path.name}: the comment's fixed release"
    assert scenario.consumer_group.version == zoo.affected
    assert scenario.name == path.stem and scenario.description


@pytest.mark.parametrize("path, scenario", ZOO, ids=[p.name for p, _ in ZOO])
def test_each_zoo_file_runs_on_both_releases_with_names_of_its_own(path, scenario):
    """What `kafka-chaos zoo` and the plugin run: the fixed release swapped in, and every topic name (the
    members' own subscriptions too) suffixed for a shared cluster."""
    for version in (scenario.zoo.affected, scenario.zoo.fixed):
        run = parse_scenario(unique_names(on_release(scenario, version), "abc123"), path.name)
        assert run.consumer_group.version == version and run.zoo is None
        assert all(t.name.endswith("-abc123") for t in run.topics)
        assert all(t.endswith("-abc123") for spec in run.consumer_group.member_specs() for t in spec.topics or [])


def test_kafka_chaos_zoo_refuses_bad_input_before_anything_starts(capsys):
    from harness.cli import EXIT_BAD_INPUT, main
    assert main(["zoo", "KAFKA-1"]) == EXIT_BAD_INPUT
    assert "BUG: 'KAFKA-1' is not in the zoo; it has KAFKA-14024" in capsys.readouterr().err
    assert main(["zoo", "--repeat", "0"]) == EXIT_BAD_INPUT
    assert "--repeat: at least 1 run" in capsys.readouterr().err


def test_kafka_chaos_zoo_lists_each_bug_with_its_releases(capsys):
    from harness.cli import main
    assert main(["zoo", "--list", "kafka-14024"]) == 0
    assert capsys.readouterr().out.split() == ["KAFKA-14024", "3.2.0", "->", "3.2.1", "expect", "stall", "kafka-14024.yaml"]


def test_the_zoo_verdict_needs_most_runs_on_the_affected_release_and_none_on_the_fixed():
    from harness.zoo import Tally, verdict

    def tally(release, runs, hits):
        t = Tally("KAFKA-1", release, "1.0.0", ["stall"])
        for i in range(runs):
            t.add(Path(f"r{i}"), {"anomaly_counts": {"stall": int(i < hits), "duplicate": 1}}, [])
        return t
    assert verdict(tally("affected", 3, 2), tally("fixed", 3, 0)) == "reproduced"
    assert verdict(tally("affected", 3, 1), tally("fixed", 3, 0)) == "below half of the runs"
    assert verdict(tally("affected", 3, 3), tally("fixed", 3, 1)) == "also on the fixed release"
    assert verdict(tally("affected", 3, 0), tally("fixed", 3, 0)) == "not reproduced"
    assert tally("fixed", 2, 0).other == {"duplicate": 2}
