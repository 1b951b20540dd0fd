"""A run is planned once (harness/plan.py): every catalog scenario compiles into a plan without a cluster, the
plan round-trips through plan.json, `validate --plan` prints it, and a bad plan.json is one line naming the field."""
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.plan import Plan, compile_plan, load_plan
from harness.scenario import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
CATALOG = sorted([*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("scenarios/zoo/*.yaml")])


@pytest.mark.parametrize("path", CATALOG, ids=lambda p: str(p.relative_to(ROOT / "scenarios")))
def test_every_catalog_scenario_compiles_and_round_trips_through_json(path, tmp_path):
    scenario = load_scenario(path)
    plan = compile_plan(scenario, offline=True)
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_json()))
    back = load_plan(tmp_path / "plan.json")
    assert back == plan and back.to_json() == plan.to_json()
    assert [f.entry() for f in plan.schedule] == scenario.schedule()
    assert plan.lanes == scenario.client_lanes() and plan.scenario.to_yaml() == scenario.to_yaml()
    assert len(plan.members) == scenario.consumer_group.member_count


def test_the_plan_names_every_member_with_its_own_settings_and_the_spares_with_the_groups():
    plan = compile_plan(parse_scenario({
        "topics": [{"name": "a"}, {"name": "b", "partitions": 2}],
        "consumer_group": {"static_membership": True, "assignor": "cooperative-sticky",
                           "members": [{"count": 2, "commit": "async"}, {"count": 1, "topics": ["b"]}]},
        "cluster": {"spare_lanes": 1}}), offline=True)
    assert [(m.name, m.lane, m.instance_id, m.settings.commit, m.settings.topics) for m in plan.members] == [
        ("member-1", "member-1", "instance-1", "async", None), ("member-2", "member-2", "instance-2", "async", None),
        ("member-3", "member-3", "instance-3", "sync", ("b",))]
    assert [(m.name, m.settings.commit) for m in plan.spares] == [("member-4", "sync")]
    assert [e.commit for e in plan.entries] == ["async", "sync"]
    assert [(t.name, t.partitions) for t in plan.topics] == [("a", 6), ("b", 2)]
    assert plan.lanes == ("member-1", "member-2", "member-3", "member-4", "producer-1")
    assert [(c.client, c.version, c.release.python is not None) for c in plan.clients] == [("librdkafka", None, True)]


def test_a_role_stays_a_role_and_a_named_target_is_concrete():
    plan = compile_plan(parse_scenario({"faults": [
        {"kind": "broker_freeze", "target": "coordinator", "at_s": 1, "duration_s": 2},
        {"kind": "broker_freeze", "target": "leader:chaos:1", "at_s": 2, "duration_s": 2},
        {"kind": "member_crash", "target": "random-member", "at_s": 3, "duration_s": 2},
        {"kind": "latency", "target": "kafka-2", "at_s": 4, "duration_s": 2, "latency_ms": 50}]}), offline=True)
    assert [(f.target, f.target_resolved_at) for f in plan.schedule] == [
        ("coordinator", "fire"), ("leader:chaos:1", "fire"), ("random-member", "fire"), ("kafka-2", "plan")]
    assert plan.schedule[3].params["latency_ms"] == 50


def test_random_faults_are_drawn_into_the_plan():
    plan = compile_plan(parse_scenario({"producer": {"records": 100_000, "rate": 5000}, "random_faults": {
        "faults": [{"kind": "member_crash", "target": "random-member"}], "seed": 3}}), offline=True)
    assert plan.schedule and all(f.target.startswith("member-") and f.target_resolved_at == "plan" for f in plan.schedule)


def test_offline_a_release_not_on_this_machine_is_pending_and_says_why():
    plan = compile_plan(parse_scenario({"consumer_group": {"client": "java"}}), offline=True)
    (client,) = plan.clients
    assert client.release is None and "Kafka image" in client.pending


def test_validate_plan_prints_the_plan(capsys):
    assert main(["validate", "--plan", str(ROOT / "scenarios/member-join.yaml")]) == 0
    printed = json.loads(capsys.readouterr().out)
    plan = Plan.model_validate(printed)
    assert [m.name for m in plan.members] == ["member-1", "member-2", "member-3"]
    assert [f.kind for f in plan.schedule] == ["member_join"] and printed["format"] == 1


def one_error_line(argv, capsys) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def written_plan(tmp_path, change) -> Path:
    data = compile_plan(parse_scenario({"faults": [
        {"kind": "broker_freeze", "target": "kafka-1", "at_s": 1, "duration_s": 2}]}), offline=True).to_json()
    change(data)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data) if isinstance(data, dict) else data)
    return path


@pytest.mark.parametrize("change, field", [
    (lambda d: d["members"][0]["settings"].update(commit=7), "members[0].settings.commit: Input should be a valid string"),
    (lambda d: d.pop("producer"), "producer: Field required"),
    (lambda d: d.update(format=2), "format: Input should be 1"),
    (lambda d: d["schedule"][0]["params"].update(speed=1), "schedule[0].speed: unknown field"),
    (lambda d: d["schedule"][0].update(target="kafka-9"), "schedule[0].target: 'kafka-9' is not one of"),
    (lambda d: d["schedule"][0].update(target="coordinator"), "schedule[0].target_resolved_at: 'coordinator' is resolved at fire"),
    (lambda d: d["scenario"]["consumer_group"].update(members=0), "scenario.consumer_group.members: a group of 1 to 32"),
])
def test_a_bad_plan_is_one_line_naming_the_field(tmp_path, capsys, change, field):
    path = written_plan(tmp_path, change)
    assert one_error_line(["run", "--plan", str(path), "--runs-dir", str(tmp_path / "runs")], capsys) \
        .startswith(f"kafka-chaos: {path}: {field}")
    assert not (tmp_path / "runs").exists()


def test_a_plan_that_is_no_plan_and_a_plan_with_a_scenario_are_refused(tmp_path, capsys):
    (tmp_path / "plan.json").write_text("[1]")
    assert "a plan is a JSON object" in one_error_line(["run", "--plan", str(tmp_path / "plan.json")], capsys)
    (tmp_path / "plan.json").write_text("{")
    assert "the plan is not JSON" in one_error_line(["run", "--plan", str(tmp_path / "plan.json")], capsys)
    line = one_error_line(["run", str(ROOT / "scenarios/default.yaml"), "--plan", str(tmp_path / "plan.json")], capsys)
    assert line == "kafka-chaos: run: give a SCENARIO, or --plan PLAN_JSON (a run's plan.json), not both"
