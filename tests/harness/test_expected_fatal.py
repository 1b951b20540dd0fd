"""Issue 22: a scenario says which members it expects to end on a fatal client error (analysis.expected_fatal);
the option reaches analysis.analyze, and a bad value is one error naming the field."""
from pathlib import Path

import pytest

from harness.scenario import ScenarioError, load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, fenced", [("duplicate-instance-id", "member-1"), ("duplicate-instance-id-kip848", "member-1-dup")])
def test_the_duplicate_instance_scenarios_expect_the_member_each_protocol_fences(name, fenced):
    assert load_scenario(ROOT / "scenarios" / f"{name}.yaml").analysis.options()["expected_fatal"] == [fenced]


def test_a_member_or_any_and_nothing_by_default():
    assert parse_scenario({}).analysis.options()["expected_fatal"] == []
    assert parse_scenario({"analysis": {"expected_fatal": "any"}}).analysis.expected_fatal == ["any"]
    assert parse_scenario({"analysis": {"expected_fatal": ["member-2", "member-4-dup"]}}).analysis.expected_fatal == \
        ["member-2", "member-4-dup"]


@pytest.mark.parametrize("value", [["worker-1"], 3, [None], ["member-1", ""]])
def test_a_bad_value_names_the_field(value):
    with pytest.raises(ScenarioError, match=r"analysis\.expected_fatal"):
        parse_scenario({"analysis": {"expected_fatal": value}})
