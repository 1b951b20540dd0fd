"""Issue 22 point 5, each path found by hand: bad input exits 2 with one line naming the file and the field, never
a traceback or a hang; `kafka-chaos clean` with no Docker engine says so and exits 0."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faults.schedule import MAX_FAULTS, ScheduleTooLong, random_schedule
from harness.cli import main
from harness.run import load_schedule
from harness.scenario import ScenarioError, load_scenario, parse_with_unique_names

ROOT = Path(__file__).resolve().parents[2]
MENU = "random_faults:\n  faults: [{kind: broker_freeze, target: random}]\n"


def one_error_line(argv, capsys) -> str:
    """The CLI's one line on stderr, after exit 2 (SystemExit included: argparse's own errors are two lines)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in out + err, err
    return err.strip()


def written(tmp_path, content: bytes | str, name="s.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


@pytest.mark.parametrize("content, words", [
    (b"name: x\n\xff\xfe: 1\n", "the scenario is not UTF-8 text (byte 0xff at offset 8)"),
    ("café".encode("latin-1"), "the scenario is not UTF-8 text (byte 0xe9 at offset 3)"),
    (b"a: [1,\n", "the scenario is not valid YAML at line 2, column 1"),
    (b"name: a\nname: b\n", "the key 'name' is given twice"),
    (b"", "the scenario is empty"),
    (b"# only a comment\n", "the scenario is empty"),
    (b"- 1\n- 2\n", "a scenario is a YAML mapping, got list"),
    (b"extra: " + b"[" * 3000 + b"]" * 3000 + b"\n", "extra: unknown field"),
])
@pytest.mark.parametrize("command", [["validate"], ["validate", "--schedule"], ["run"]])
def test_a_scenario_file_that_is_not_one_is_one_line_naming_it(tmp_path, capsys, content, words, command):
    path = written(tmp_path, content)
    line = one_error_line([*command, path, *(["--runs-dir", tmp_path / "runs"] if command == ["run"] else [])], capsys)
    assert line.startswith(f"kafka-chaos: {path}: ") and words in line, line
    assert not (tmp_path / "runs").exists()


def test_a_folder_or_a_missing_file_is_one_line_naming_it(tmp_path, capsys):
    assert one_error_line(["validate", tmp_path], capsys) == f"kafka-chaos: {tmp_path}: cannot read the scenario: Is a directory"
    missing = tmp_path / "missing.yaml"
    assert one_error_line(["validate", missing], capsys) == \
        f"kafka-chaos: {missing}: cannot read the scenario: No such file or directory"


@pytest.mark.timeout(60)
def test_an_endless_file_is_refused_not_read_to_its_end(capsys):
    assert one_error_line(["validate", "/dev/zero"], capsys) == \
        "kafka-chaos: /dev/zero: the scenario is larger than 16 MB; is it the right file?"


def test_a_field_error_is_one_line_with_every_field(tmp_path, capsys):
    path = written(tmp_path, "producer: {records: 0}\nconsumer_group: {batch_size: x}\n")
    assert one_error_line(["validate", path], capsys) == (
        f"kafka-chaos: {path}: producer.records: Input should be greater than or equal to 1; "
        "consumer_group.batch_size: Input should be a valid integer, unable to parse string as an integer")


@pytest.mark.parametrize("command", [["validate", "--schedule"], ["run"]])
def test_a_random_fault_longer_than_an_hour_is_refused_naming_duration_s(tmp_path, capsys, command):
    path = written(tmp_path, MENU + "  duration_s: [3, 5000]\n")
    assert one_error_line([*command, path], capsys) == (
        f"kafka-chaos: {path}: random_faults.duration_s: must be [low, high] with 0.1 <= low <= high <= 3600, "
        "got [3, 5000]")


@pytest.mark.timeout(60)  # each of these used to loop without end
@pytest.mark.parametrize("settings, field", [
    ("  until_s: .inf\n", "random_faults.until_s: Input should be less than or equal to 604800"),
    ("  start_s: 1.0e+17\n  until_s: 1.0e+18\n", "random_faults.start_s: Input should be less than or equal to 604800"),
    ("  until_s: 600000\n  interval_s: [0, 0]\n  duration_s: [0.1, 0.1]\n",
     f"random_faults.until_s: more than {MAX_FAULTS} faults would start before 600000 s"),
    ("producer: {records: 9223372036854775807, rate: 1}\n",
     "producer.records: the random schedule runs for the producer's planned time (9.22337e+18 s)"),
    ("  interval_s: [.nan, 1]\n", "random_faults.interval_s: must be [low, high]"),
    ("  duration_s: [1, .inf]\n", "random_faults.duration_s: must be [low, high]"),
])
def test_a_random_schedule_that_would_not_end_is_refused_naming_the_field(tmp_path, capsys, settings, field):
    text = settings + MENU if settings.startswith("producer") else MENU + settings
    path = written(tmp_path, text)
    assert one_error_line(["validate", "--schedule", path], capsys).startswith(f"kafka-chaos: {path}: {field}")


@pytest.mark.timeout(60)
def test_a_fault_that_would_never_start_is_refused():
    """A run waits for its last fault's heal: at_s of 1e30 would never end."""
    with pytest.raises(ScenarioError, match=r"^scenario: faults\[0\]\.at_s: Input should be less than or equal"):
        parse_with_unique_names({"faults": [{"kind": "broker_freeze", "target": "kafka-1", "at_s": 1e30,
                                             "duration_s": 1}]}, "x", "scenario")


@pytest.mark.timeout(60)
def test_random_schedule_stops_at_its_bound():
    with pytest.raises(ScheduleTooLong, match=f"more than {MAX_FAULTS} faults would start before 1e\\+18 s"):
        random_schedule([{"kind": "broker_freeze", "target": "random"}], seed=1, start_s=1e17, until_s=1e18,
                        interval_s=(0, 0), duration_s=(0.1, 0.1), brokers=["kafka-1"], members=[])


@pytest.mark.parametrize("content, words", [
    (b"\xff\n", "the schedule is not UTF-8 text"),
    (b"", "the schedule is empty"),
    (b"[1,", "the schedule is not valid YAML"),
    (b"faults: 3\n", "a schedule is a list of fault entries"),
])
def test_a_schedule_file_that_is_not_one_is_one_line_naming_it(tmp_path, content, words):
    path = written(tmp_path, content, "schedule.json")
    with pytest.raises(ScenarioError) as error:
        load_schedule(path)
    assert str(error.value).startswith(f"{path}: ") and words in str(error.value) and "\n" not in str(error.value)


def test_run_refuses_a_schedule_that_is_not_text_before_starting(tmp_path, capsys):
    schedule = written(tmp_path, b"\xff", "schedule.json")
    line = one_error_line(["run", ROOT / "scenarios/default.yaml", "--schedule", schedule, "--runs-dir", tmp_path / "runs"], capsys)
    assert line == f"kafka-chaos: {schedule}: the schedule is not UTF-8 text (byte 0xff at offset 0)"
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("under", ["", "sub/"])
@pytest.mark.parametrize("command", [["run", ROOT / "scenarios/default.yaml"], ["zoo", "KAFKA-14024"]])
def test_runs_dir_naming_a_file_is_refused_before_starting(tmp_path, capsys, command, under):
    a_file = written(tmp_path, "x", "a-file")
    line = one_error_line([*command, "--runs-dir", f"{a_file}/{under}"], capsys)
    assert line == f"kafka-chaos: --runs-dir: {a_file} is a file, not a folder"


def test_run_scenario_under_a_file_is_bad_input_before_anything_starts(tmp_path):
    """The pytest plugin's --keep-runs and the zoo reach run_scenario without the CLI's check."""
    from harness.run import run_scenario
    a_file = written(tmp_path, "x", "a-file")
    with pytest.raises(ScenarioError, match=f"^{a_file}/runs: cannot make a run directory there: Not a directory$"):
        run_scenario(parse_with_unique_names({}, "x", "scenario"), a_file / "runs")


def test_zoo_out_naming_a_file_is_refused(tmp_path, capsys):
    a_file = written(tmp_path, "x", "a-file")
    line = one_error_line(["zoo", "KAFKA-14024", "--runs-dir", tmp_path / "runs", "--out", a_file], capsys)
    assert line == f"kafka-chaos: --out: {a_file} is a file, not a folder"


def test_scenarios_dir_that_is_no_catalog_is_refused(tmp_path, capsys):
    a_file = written(tmp_path, "x", "a-file")
    assert one_error_line(["scenarios", "--dir", a_file], capsys) == f"kafka-chaos: --dir: {a_file} is not a folder"
    (tmp_path / "empty").mkdir()
    assert one_error_line(["scenarios", "--dir", tmp_path / "empty"], capsys) == \
        f"kafka-chaos: --dir: {tmp_path / 'empty'} has no scenario file (*.yaml)"
    written(tmp_path / "empty", b"\xff", "bad.yaml")
    assert "bad.yaml: the scenario is not UTF-8" in one_error_line(["scenarios", "--dir", tmp_path / "empty"], capsys)


def test_clean_without_a_docker_engine_says_so_and_exits_0(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
           "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR": str(tmp_path / "service")}  # never another session's service
    result = subprocess.run([sys.executable, "-m", "harness.cli", "clean"], capture_output=True, text=True,
                            timeout=120, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("no Docker engine answers (") and "no container to remove" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("scenario, words", [
    ({"topics": [{"name": "a"}], "consumer_group": {"topics": ["b"]}}, "consumer_group.topics: 'b' is not a topic of the run (a)"),
    ({"consumer_group": ["not", "a", "mapping"]}, "consumer_group: Input should be a valid dictionary"),
    ({"topic": "chaos"}, "topic: Input should be a valid dictionary"),
    ({"faults": [{"kind": "topic_create"}]}, "faults[0].target: Field required"),
])
def test_chaos_run_checks_the_scenario_as_written_before_renaming_it(scenario, words):
    """The pytest plugin's chaos_run gives each run unique names; an error names the user's own."""
    with pytest.raises(ScenarioError) as error:
        parse_with_unique_names(scenario, "a1b2c3", "chaos_run")
    assert str(error.value).startswith(f"chaos_run: {words}") and "a1b2c3" not in str(error.value), str(error.value)


def test_chaos_run_names_are_still_unique():
    parsed = parse_with_unique_names({"topic": {"name": "t"}}, "a1b2c3", "chaos_run")
    assert parsed.topic.name == "t-a1b2c3" and parsed.consumer_group.group_id == "chaos-group-a1b2c3"


def test_every_catalog_scenario_still_loads():
    from harness.sweep.spec import load_sweep
    for path in sorted((ROOT / "scenarios").glob("**/*.yaml")):
        (load_sweep if path.parent.name == "sweep" else load_scenario)(path)  # a sweep file: each cell a scenario
