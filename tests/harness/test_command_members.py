"""Issue 53 (1, 7): a member spec that names a command runs a program of the user's. Its rules hold before anything
starts, one error naming the field: a program that is not there, an unknown placeholder, and what only the harness's
own members take (client, version, members_per_host, processing, slow_processing). The command's argv and variables
are filled in with the run's values."""
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.plan import compile_plan
from harness.scenario import ScenarioError, load_scenario, parse_scenario, with_workdir
from workloads import command
from workloads.config import ClientRelease
from workloads.services import command_process
from harness.run import member_config

HERE = Path(__file__).parent


def group(**fields) -> dict:
    return {"consumer_group": {"members": [{"count": 2, "command": ["{python}", "app.py"], **fields}]}}


def refusal(data: dict, folder: Path = HERE) -> str:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(with_workdir(data, folder))
    return str(err.value)


def test_a_command_member_is_planned_as_its_own_kind_in_the_scenario_files_folder(tmp_path):
    (tmp_path / "app.py").write_text("")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(group()))
    plan = compile_plan(load_scenario(path), offline=True)
    [member, _] = plan.members
    assert member.settings.client == "command" and member.settings.command == ["{python}", "app.py"]
    assert member.settings.workdir == str(tmp_path.resolve()) and member.host is None and member.lane == member.name
    assert plan.member_field("member-2") == "consumer_group.members[0]"


def test_a_program_that_is_not_there_is_named_with_the_folder(tmp_path):
    message = refusal(group(command=["pyhton", "app.py"]), tmp_path)
    assert message == f"scenario: consumer_group.members[0].command: pyhton: not found (cwd {tmp_path})", message
    assert "./missing.sh: not found" in refusal(group(command="./missing.sh --fast"), tmp_path)


def test_a_relative_program_is_the_folders_and_must_be_executable(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    assert "run.sh: not found" in refusal(group(command=["./run.sh"]), tmp_path)
    script.chmod(0o755)
    parse_scenario(with_workdir(group(command=["./run.sh", "{member}"]), tmp_path))


def test_an_unknown_placeholder_names_the_known_ones():
    message = refusal(group(command=["{python}", "app.py", "--broker", "{bootstrap}"]))
    assert "consumer_group.members[0].command: {bootstrap} is not a placeholder; placeholders: {bootstrap_servers}" in message


@pytest.mark.parametrize("fields, field, words", [
    ({"client": "java"}, "client", "a command member runs your program, not the Java member (VerifiableConsumer)"),
    ({"version": "2.6.0"}, "version", "a command member pins no client release"),
])
def test_an_entry_refuses_what_only_the_harness_members_take(fields, field, words):
    message = refusal(group(**fields))
    assert f"consumer_group.members[0].{field}: {words}" in message, message


def test_the_group_refuses_hosting_and_processing_for_a_command_member():
    data = {"consumer_group": {"members": 4, "command": ["{python}", "app.py"], "members_per_host": 2}}
    assert "consumer_group.members_per_host: a command member is never hosted" in refusal(data)
    data = {"consumer_group": {"members": 2, "command": ["{python}", "app.py"], "processing": {"per_batch_ms": 5}}}
    assert "consumer_group.processing: a command member does its own work" in refusal(data)


def test_slow_processing_aimed_at_a_command_member_is_refused():
    data = {**group(), "faults": [{"kind": "slow_processing", "target": "member-1", "at_s": 5, "duration_s": 5,
                                    "per_record_ms": 10}]}
    assert "faults[0].kind: the command member cannot take slow_processing" in refusal(data)


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path, capsys):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(group(command=["pyhton", "app.py"])))
    assert main(["validate", str(path)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[")]
    assert err == [f"kafka-chaos: {path}: consumer_group.members[0].command: pyhton: not found (cwd {tmp_path})"], err


def test_the_argv_and_the_variables_carry_the_runs_values(tmp_path):
    (tmp_path / "app.py").write_text("")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({**group(static_membership=True), "topics": [{"name": "a"}, {"name": "b"}]}))
    plan = compile_plan(load_scenario(path), offline=True)
    settings = plan.members[0].settings
    config = member_config(plan, settings, ClientRelease(), member="member-1", run_dir=tmp_path / "run",
                           bootstrap="127.0.0.1:19092", instance_id="instance-1")
    process = command_process(config)
    assert process.argv == [sys.executable, "app.py"] and process.cwd == str(tmp_path.resolve())
    assert process.env["KAFKA_CHAOS_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092"
    assert process.env["KAFKA_CHAOS_TOPICS"] == "a,b" and process.env["KAFKA_CHAOS_INSTANCE_ID"] == "instance-1"


def test_a_string_command_is_run_by_sh_with_each_value_quoted():
    filled = command.values(bootstrap_servers="h:1", group_id="g; rm -rf /", topics=["t"], member="member-1",
                            instance_id=None, output_topic=None)
    assert command.argv("app --group {group_id} --id {member}", filled) == [
        "sh", "-c", "app --group 'g; rm -rf /' --id member-1"]
    assert command.argv(["app", "--group={group_id}"], filled) == ["app", "--group=g; rm -rf /"]
