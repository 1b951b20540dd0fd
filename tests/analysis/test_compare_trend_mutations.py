"""Mutated summary.json, scenario.yaml, run.json files and run directories fed to `kafka-chaos compare` and
`kafka-chaos trend` (in process, through their `main`): each ends with a verdict or with exit 2 and one line that
names the file, never a traceback."""
import copy
import json

import pytest
import yaml

from analysis.cli import main
from harness.scenario import load_scenario, unique_names
from mutations import key_paths

SUMMARY = {
    "summary_version": 1, "valid": True, "produced_records": 30_000, "consumed_rows": 30_012, "rebalances": 3,
    "duplicated_offsets": 12, "duplicate_extra_deliveries": 12, "lost_records": 0,
    "anomaly_counts": {"duplicate": 12, "lost": 0, "stall": None},
    "checks": {"duplicate": {"ran": True, "status": "ran", "count": 12}, "lost": {"ran": True, "status": "ran", "count": 0},
               "stall": {"ran": False, "status": "not_run", "reason": "no events"}},
    "faults": [{"id": "f-1", "kind": "member_freeze", "time_to_stable_ms": 4200}],
    "rebalance_figures": {"no_owner_total_ms": 1500, "no_owner_longest_ms": 900},
    "time_range_ms": [1_795_602_577_784, 1_795_602_617_784],
}
SCENARIO = unique_names(load_scenario("scenarios/static-bounce.yaml").settings(), "a1b2c3")
RUN = {"run_dir": "x", "source": "scenarios/static-bounce.yaml", "phases_s": {}, "drained": True, "errors": []}

WRONG_VALUES = ["text", -1, 10 ** 30, 1.5e308, True, None, [1, "x"], {"a": {"b": []}}]   # one of each kind
FILE_BYTES = [b"", b"\xff\xfe\x00garbage", b"{", b"[1, 2]", b"null", b"42", b'"text"', b"{\"a\": NaN}",
              b"[" * 5000 + b"]" * 5000, b"9" * 5000, "é".encode("latin-1"), b"\x00\x01\x02"]


def _set(data, path, value, delete=False):
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


def mutations(data, top_only=False):
    """(label, mutated value): each key deleted, each value replaced by each wrong value, an unknown key added."""
    for path in key_paths(data):
        if not path or (top_only and len(path) > 1):
            continue
        label = ".".join(map(str, path))
        if not isinstance(path[-1], int):
            yield f"{label} deleted", _set(data, path, None, delete=True)
        for value in WRONG_VALUES:
            yield f"{label}={json.dumps(value)[:20]}", _set(data, path, value)
    yield "unknown key", {**data, "unknown_key": {"x": 1}}


def write_run(root, name, summary=SUMMARY, scenario=SCENARIO, run=RUN):
    run_dir = root / name
    (run_dir / "report").mkdir(parents=True)
    for file, data, dump in (("report/summary.json", summary, json.dumps), ("scenario.yaml", scenario, yaml.safe_dump),
                             ("run.json", run, json.dumps)):
        if data is not None:
            (run_dir / file).write_bytes(data if isinstance(data, bytes) else dump(data).encode())
    return run_dir


def verdict_or_bad_input(argv, capsys, names) -> tuple[int, str | None]:
    """Runs the command: (exit code, what is wrong with how it ended or None). Exit 2 must come with one stderr line
    that names one of `names`; an exception other than argparse's exit fails the test with its traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    if "Traceback" in err:
        return code, f"a traceback: {err[-300:]}"
    lines = [line for line in err.splitlines() if "bad input" in line]
    if code == 2 and not (len(lines) == 1 and any(n in lines[0] for n in names)):
        return code, f"exit 2 without one line naming {names}: {err!r}"
    return code, None


def problems(tmp_path, capsys, cases, names) -> list[str]:
    """Each (label, run directory) fed to compare (a verdict 0, 1, 3, or 2) and trend (0 or 2): what went wrong."""
    found = []
    for label, run_dir in cases:
        for command, allowed in (("compare", (0, 1, 2, 3)), ("trend", (0, 2))):
            out = tmp_path / "out" / (label.replace("/", "_")[:60] + command)
            code, wrong = verdict_or_bad_input([command, str(run_dir), "--out", str(out)], capsys, names)
            if wrong or code not in allowed:
                found.append(f"{command} on {label}: exit {code}, {wrong or 'not an allowed exit'}")
    return found


def test_the_unmutated_run_is_read(tmp_path, capsys):
    run_dir = write_run(tmp_path, "run")
    assert verdict_or_bad_input(["compare", str(run_dir), "--out", str(tmp_path / "cmp")], capsys, []) == (0, None)
    assert verdict_or_bad_input(["trend", str(run_dir), "--out", str(tmp_path / "t.html")], capsys, []) == (0, None)


def test_mutated_summaries(tmp_path, capsys):
    cases = [(label, write_run(tmp_path, f"s{i}", summary=summary)) for i, (label, summary) in enumerate(mutations(SUMMARY))]
    assert problems(tmp_path, capsys, cases, ["summary.json"]) == []


SCENARIO_MUTATIONS = list(mutations(SCENARIO, top_only=True)) + [
    ("consumer_group." + k + "=" + json.dumps(v)[:20], {**SCENARIO, "consumer_group": {**SCENARIO["consumer_group"], k: v}})
    for k in ("client", "version", "protocol", "assignor", "static_membership", "group_id", "members")
    for v in WRONG_VALUES]


def test_mutated_scenarios(tmp_path, capsys):
    cases = [(label, write_run(tmp_path, f"s{i}", scenario=scenario)) for i, (label, scenario) in enumerate(SCENARIO_MUTATIONS)]
    assert problems(tmp_path, capsys, cases, ["scenario.yaml"]) == []


def test_mutated_run_json(tmp_path, capsys):
    cases = [(label, write_run(tmp_path, f"s{i}", run=run)) for i, (label, run) in enumerate(mutations(RUN, top_only=True))]
    assert problems(tmp_path, capsys, cases, ["run.json"]) == []


@pytest.mark.parametrize("file", ["report/summary.json", "scenario.yaml", "run.json"])
@pytest.mark.parametrize("content", FILE_BYTES + [b"!!python/object:os.system {}", b"a: &a [*a]", b"- - - - -"],
                         ids=lambda c: repr(c[:12]))
def test_garbage_files(tmp_path, capsys, file, content):
    run_dir = write_run(tmp_path, "run")
    (run_dir / file).write_bytes(content)
    assert problems(tmp_path, capsys, [(file, run_dir)], [file.split("/")[-1]]) == []


@pytest.mark.parametrize("broken", ["summary is a folder", "scenario is a folder", "run.json is a folder",
                                    "report is a file", "run is a file", "missing", "empty"])
def test_broken_run_directories(tmp_path, capsys, broken):
    run_dir = write_run(tmp_path, "run")
    if broken == "summary is a folder":
        (run_dir / "report" / "summary.json").unlink()
        (run_dir / "report" / "summary.json").mkdir()
    elif broken in ("scenario is a folder", "run.json is a folder"):
        name = "scenario.yaml" if broken.startswith("scenario") else "run.json"
        (run_dir / name).unlink()
        (run_dir / name).mkdir()
    elif broken == "report is a file":
        (run_dir / "report" / "summary.json").unlink()
        (run_dir / "report").rmdir()
        (run_dir / "report").write_text("x")
    elif broken == "run is a file":
        run_dir = tmp_path / "file"
        run_dir.write_text("x")
    elif broken == "missing":
        run_dir = tmp_path / "missing"
    else:
        run_dir = tmp_path / "empty"
        run_dir.mkdir()
    assert problems(tmp_path, capsys, [(broken, run_dir)], [str(run_dir.name), "summary.json", "scenario.yaml",
                                                            "run.json", "produced/", "no run with"]) == []
