"""Issue 40: a sweep file's grid, its cells as scenarios, and the sweep folder that resumes; bad input is one line,
exit 2, before anything starts, and never costs a finished cell."""
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.scenario import ScenarioError, parse_scenario
from harness.sweep.spec import STREAMS_STYLES, STYLES, load_sweep, parse_sweep
from harness.sweep.store import CELLS_FILE, SweepDir

GRID = {"members": [10, 50, 100, 200, 500], "styles": [s for s in STYLES if s not in STREAMS_STYLES], "triggers": ["join", "crash", "bounce", "partitions_add"],
        "clients": ["librdkafka", "java"], "repeats": 3}


def sweep(**changes) -> dict:
    data = {"name": "cost", "grid": dict(GRID)}
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            data.setdefault(section, {})[field] = value
        else:
            data[section] = value
    return data


def test_the_published_grid_expands_into_cells_that_are_each_a_valid_scenario():
    spec = parse_sweep(sweep(), "s.yaml")
    cells = spec.cells()
    assert len(cells) == 5 * 5 * 4 * 2 * 3 == len({c.id for c in cells})
    assert [c.members for c in cells] == sorted(c.members for c in cells if c.client == "librdkafka") + \
        sorted(c.members for c in cells if c.client == "java")  # smallest groups first, a client at a time
    for cell in cells:
        group = parse_scenario(spec.cell_scenario(cell), cell.id).consumer_group
        assert group.member_count == cell.members and group.members_per_host == min(50, cell.members)
        assert group.protocol == STYLES[cell.style]["protocol"]


def test_a_cells_join_watch_is_its_scenarios_and_left_unset_changes_no_fingerprint():
    cell = parse_sweep(sweep(), "s.yaml").cells()[0]
    assert parse_scenario(parse_sweep(sweep(), "s.yaml").cell_scenario(cell), "c").run.join_watch is True
    off = parse_sweep(sweep(cell__join_watch=False), "s.yaml")
    assert parse_scenario(off.cell_scenario(cell), "c").run.join_watch is False
    assert off.fingerprint() != parse_sweep(sweep(), "s.yaml").fingerprint() == \
        parse_sweep(sweep(cell__join_watch=None), "s.yaml").fingerprint()


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2] / "scenarios" / "sweep").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_sweep_file_the_project_ships_loads_and_its_cells_have_distinct_valid_names(path):
    """A long sweep name and a long cell id (a static style's partitions_add) must still make a valid scenario name
    (80 characters at most): the name leaves the sweep's name out then."""
    spec = load_sweep(path)
    names = [spec.cell_name(cell) for cell in spec.cells()]
    assert len(set(names)) == len(names) and max(map(len, names)) <= 80


@pytest.mark.parametrize("style, trigger, expect", [
    ("static-cooperative-sticky", "bounce", {"kind": "member_bounce", "target": "member-25"}),
    ("consumer-range", "crash", {"kind": "member_crash", "target": "member-25", "duration_s": 60}),
    ("eager-range", "partitions_add", {"kind": "partitions_add", "partitions": 250}),
    ("consumer-uniform", "join", {"kind": "member_join", "count": 1, "at_s": 20}),
])
def test_each_trigger_is_one_fault_at_the_end_of_the_warm_up(style, trigger, expect):
    data = sweep(grid={**GRID, "members": [50], "styles": [style], "triggers": [trigger], "clients": ["librdkafka"]})
    spec = parse_sweep(data, "s.yaml")
    scenario = spec.cell_scenario(spec.cells()[0])
    (fault,) = scenario["faults"]
    assert expect.items() <= fault.items()
    group = scenario["consumer_group"]
    assert group.get("metadata_refresh_ms") == (2000 if trigger == "partitions_add" and style == "eager-range" else None)
    assert group["session_timeout_ms"] == (None if style.startswith("consumer") else 10_000)


def test_a_streams_cell_is_one_process_an_instance_its_protocol_the_clients_and_its_standbys_the_styles():
    """Kafka Streams in a sweep (issue 55): the protocol is the client axis (streams-classic, streams-kip1071), the
    styles set standbys or warm-ups, and no cell is hosted; a style the protocol cannot run is refused by name."""
    spec = load_sweep(Path(__file__).resolve().parents[2] / "scenarios" / "sweep" / "streams-kip1071.yaml")
    group = spec.cell_scenario(spec.cells()[-1])["consumer_group"]
    assert (group["client"], group["protocol"], group["streams"]["standby_replicas"]) == ("streams", "streams", 1)
    assert "members_per_host" not in group and group["session_timeout_ms"] is None
    data = sweep(grid={**GRID, "members": [3], "styles": ["warm-up"], "triggers": ["crash"],
                       "clients": ["streams-kip1071"]})
    with pytest.raises(ScenarioError) as err:
        parse_sweep(data, "s.yaml")
    assert "cell streams-kip1071-3m-4ppm-warm-up-crash-r1: consumer_group.streams.warmup: the streams protocol has " \
           "it from Kafka 4.4" in str(err.value)


@pytest.mark.parametrize("changes, words", [
    ({"grid": {**GRID, "styles": ["eager"]}}, "s.yaml: grid.styles[0]: Input should be 'eager-range'"),
    ({"grid": {**GRID, "members": []}}, "s.yaml: grid.members: List should have at least 1 item"),
    ({"grid": {**GRID, "triggers": []}}, "s.yaml: grid.triggers: List should have at least 1 item"),
    ({"grid": {**GRID, "members": [10, 10]}}, "s.yaml: grid.members: a value is given twice"),
    ({"grid": {**GRID, "members": [3000]}}, "grid: cell librdkafka-3000m-4ppm-eager-range-join-r1: topic.partitions"),
    ({"grid": {**GRID, "partitions_per_member": [30]}}, "cell librdkafka-500m-30ppm-eager-range-join-r1: topic.partitions: "
                                                        "Input should be less than or equal to 9999"),
    ({"cell__heartbeat_interval_ms": 20_000}, "s.yaml: cell.heartbeat_interval_ms: must be below session_timeout_ms"),
    ({"cell__size": 3}, "s.yaml: cell.size: unknown field"),
    ({"name": "Cost Curve"}, "s.yaml: name: String should match pattern"),
])
def test_bad_sweep_files_are_one_error_naming_the_field(changes, words):
    with pytest.raises(ScenarioError) as err:
        parse_sweep(sweep(**changes), "s.yaml")
    assert words in str(err.value)


def test_a_bad_sweep_file_exits_2_with_one_line_and_starts_nothing(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(sweep(grid={**GRID, "styles": ["stop-the-world"]})))
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "grid.styles[0]" in err
    assert not (tmp_path / "out").exists()


def finished_folder(tmp_path, spec) -> SweepDir:
    folder = SweepDir(tmp_path / "out")
    folder.open(spec, "s.yaml")
    for cell in spec.cells()[:2]:
        folder.append({**cell.to_json(), "status": "ok", "time_to_stable_ms": 1000})
    return folder


def test_a_sweep_resumed_from_a_changed_file_is_refused_and_its_cells_are_kept(tmp_path, capsys):
    spec = parse_sweep(sweep(grid={**GRID, "members": [10]}), "s.yaml")
    folder = finished_folder(tmp_path, spec)
    before = (folder.path / CELLS_FILE).read_bytes()
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(sweep(grid={**GRID, "members": [10]}, cell__rate=900)))
    assert main(["sweep", str(path), "--out", str(folder.path)]) == 2
    err = capsys.readouterr().err
    assert "was started from a different sweep file" in err and "its finished cells are kept there" in err
    assert (folder.path / CELLS_FILE).read_bytes() == before


def test_a_resumed_sweep_knows_its_finished_cells_and_runs_failed_ones_again(tmp_path, capsys):
    spec = parse_sweep(sweep(grid={**GRID, "members": [10]}), "s.yaml")
    folder = finished_folder(tmp_path, spec)
    third = spec.cells()[2]
    folder.append({**third.to_json(), "status": "failed", "error": "harness: x"})
    with (folder.path / CELLS_FILE).open("a") as out:
        out.write('{"cell": "half a li')  # the sweep was killed while it wrote
    assert set(SweepDir(folder.path).open(spec, "s.yaml")) == {c.id for c in spec.cells()[:2]}
    folder.append({**third.to_json(), "status": "unsettled"})
    assert set(folder.finished()) == {c.id for c in spec.cells()[:3]}
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(sweep(grid={**GRID, "members": [10]})))
    assert main(["sweep", str(path), "--out", str(folder.path), "--list"]) == 0
    listing = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    assert listing[third.id] == "unsettled" and listing[spec.cells()[3].id] == "to run"


def test_a_folder_that_is_not_a_sweep_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(ScenarioError, match="--out: .* is not empty and holds no sweep"):
        SweepDir(tmp_path / "out").open(parse_sweep(sweep(), "s.yaml"), "s.yaml")


def test_a_trigger_is_one_declaration(monkeypatch):
    """Issue 52 (4): a trigger added to harness/sweep/triggers.py is a grid's value, and its cells run its fault."""
    from harness.sweep import triggers
    leave = triggers.SweepTrigger("leave", "one member leaves", lambda cell, s: {
        "kind": "member_leave", "target": "member-1", "duration_s": 1})
    monkeypatch.setitem(triggers.TRIGGERS, "leave", leave)
    spec = parse_sweep(sweep(grid={**GRID, "members": [10], "triggers": ["leave"], "clients": ["librdkafka"]}), "s.yaml")
    cell = spec.cells()[0]
    assert cell.trigger == "leave" and spec.cell_scenario(cell)["faults"][0]["kind"] == "member_leave"
    with pytest.raises(ScenarioError, match="triggers: 'nope' is not a trigger"):
        parse_sweep(sweep(grid={**GRID, "triggers": ["nope"]}), "s.yaml")
