"""Issue 22 point 5: bad input never ends in a traceback or a hang.

Every catalog and zoo scenario, mutated (wrong types, huge and negative numbers, missing and unknown keys, bytes
that are not UTF-8, truncated YAML, a list where a mapping goes), is fed to `kafka-chaos validate` and
`kafka-chaos validate --schedule` in this process (through harness.cli.main): each ends with exit 0 or with exit 2
and one line that names the file. Mutated run directories fed to `kafka-chaos analyze` end with 0, 1 or 2, never a
traceback. Every mutation is drawn from a seeded generator, so a failure names a mutation that replays.
"""
import copy
import json
import random
import zlib
from pathlib import Path

import pytest
import yaml

from harness.cli import CATALOG, main
from mutations import key_paths

SCENARIOS = sorted(CATALOG.glob("*.yaml")) + sorted((CATALOG / "zoo").glob("*.yaml"))
WRONG_VALUES = ["text", "", -1, 0, 0.5, 1e30, -1e30, 2 ** 63, -2 ** 63, float("inf"), float("nan"), True, None,
                [], [1, "x"], {}, {"unknown": 1}, "2026-11-25", "1e30"]
DATA_MUTATIONS_PER_FILE = 14
DEEP = 3_000  # nesting deeper than Python's recursion limit


def _at(data, path):
    for key in path:
        data = data[key]
    return data


def _mutated(data, rng: random.Random) -> tuple[str, object]:
    """One seeded mutation of a scenario's data: (what was done, the new data)."""
    data = copy.deepcopy(data)
    path = rng.choice(list(key_paths(data))[1:])
    parent, key, value = _at(data, path[:-1]), path[-1], _at(data, path)
    where = ".".join(map(str, path))
    move = rng.choice(["wrong value", "wrong value", "wrong value", "delete", "unknown key", "list for mapping"])
    if move == "delete":
        del parent[key]
        return f"{where} deleted", data
    if move == "unknown key" and isinstance(value, dict):
        value["no_such_field"] = 1
        return f"{where}.no_such_field added", data
    if move == "list for mapping" and isinstance(value, dict):
        parent[key] = [{k: v} for k, v in value.items()]
        return f"{where} a list of its entries", data
    parent[key] = rng.choice(WRONG_VALUES)
    return f"{where} = {parent[key]!r}", data


def _file_mutations(text: str, rng: random.Random) -> list[tuple[str, bytes]]:
    """Mutations of the file's bytes: (what was done, the new bytes)."""
    raw = text.encode()
    cut = rng.randrange(len(raw))
    return [
        ("not UTF-8 (0xff inside)", raw[:cut] + b"\xff\xfe" + raw[cut:]),
        ("not UTF-8 (latin-1 text)", raw + "# café\n".encode("latin-1")),
        ("truncated", raw[:cut]),
        ("truncated in a flow list", raw + b"extra: [1, 2\n"),
        ("a tab for indentation", text.replace("\n  ", "\n\t", 1).encode()),
        ("empty", b""),
        ("only a comment", b"# nothing\n"),
        ("a list at the top", yaml.safe_dump([yaml.safe_load(text)]).encode()),
        ("a scalar at the top", b"42\n"),
        ("a duplicate key", raw + b"\nname: again\n"),
        ("nested too deeply", raw + b"\nextra: " + b"[" * DEEP + b"]" * DEEP + b"\n"),
        ("an alias bomb", raw + b"\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
         + b"".join(f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n".encode() for i in range(1, 9))
         + b"random_faults: {faults: *a8}\n"),
        ("a NUL byte", raw[:cut] + b"\x00" + raw[cut:]),
    ]


def mutations(scenario: Path) -> list[tuple[str, bytes]]:
    rng = random.Random(zlib.crc32(scenario.name.encode()))  # seeded: the same mutations every run
    text = scenario.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    drawn = [_mutated(data, rng) for _ in range(DATA_MUTATIONS_PER_FILE)]
    as_yaml = [(what, yaml.safe_dump(new, sort_keys=False).encode()) for what, new in drawn]
    return _file_mutations(text, rng) + as_yaml


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def problems_of(argv: list[str], path: Path, capsys) -> list[str]:
    """What is wrong with how the CLI ended on bad input (nothing, when it ended well)."""
    try:
        code, out, err = run_cli(argv, capsys)
    except Exception as exc:  # noqa: BLE001  the finding itself: a traceback
        capsys.readouterr()
        return [f"{type(exc).__name__}: {exc}"]
    found = []
    if "Traceback" in out + err:
        found.append("a traceback in the output")
    if code == 0:
        if not isinstance(yaml.safe_load(out), (dict, list)):
            found.append(f"exit 0 without the scenario or schedule printed: {out[:200]!r}")
    elif code == 2:
        lines = err.strip().splitlines()
        if len(lines) != 1 or str(path) not in lines[0]:
            found.append(f"exit 2 with not one line naming the file: {err[:400]!r}")
    else:
        found.append(f"exit {code}: {err[:400]!r}")
    return found


@pytest.mark.timeout(120)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.relative_to(CATALOG).as_posix())
def test_a_mutated_scenario_is_valid_or_one_error_line(scenario, tmp_path, capsys):
    failures, path = [], tmp_path / scenario.name
    for what, content in mutations(scenario):
        path.write_bytes(content)
        for argv in (["validate", str(path)], ["validate", "--schedule", str(path)]):
            failures += [f"{' '.join(argv[:-1])} [{what}]: {p}" for p in problems_of(argv, path, capsys)]
    assert not failures, "\n".join(failures)


def test_the_mutations_are_mostly_refused(tmp_path, capsys):
    """The generator makes bad input: most mutations of the default scenario are refused (exit 2)."""
    path, codes = tmp_path / "default.yaml", []
    for _, content in mutations(CATALOG / "default.yaml"):
        path.write_bytes(content)
        codes.append(run_cli(["validate", str(path)], capsys)[0])
    assert codes.count(2) > len(codes) // 2, codes


# Run directories: a few cases only, each one analysis in this process's Spark session.

def _synthetic_run(root: Path, jsonl_members=("a",)) -> Path:
    from analysis.api import write_synthetic_run as write_run
    return write_run(root, jsonl_members)


def _not_utf8_consumed(rd: Path) -> Path:
    log = rd / "consumed" / "a.jsonl"
    log.write_bytes(log.read_bytes()[:5000] + b"\xff\xfe\n" + log.read_bytes()[5000:])
    return log


def _truncated_parquet(rd: Path) -> Path:
    log = rd / "produced" / "producer-1.parquet"
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    return log


def _offset_as_text(rd: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq
    log = rd / "consumed" / "b.parquet"
    table = pq.read_table(log)
    table = table.set_column(table.schema.get_field_index("offset"), "offset",
                             pa.array([f"o{v}" for v in table.column("offset").to_pylist()]))
    pq.write_table(table, log)
    return log


def _events_not_objects(rd: Path) -> Path:
    log = rd / "events" / "a.jsonl"
    log.write_text(log.read_text() + "[1, 2]\nnot json at all\n\"text\"\n")
    return log


def _event_time_as_text(rd: Path) -> Path:
    log = rd / "events" / "b.jsonl"
    log.write_text(log.read_text().replace('"ts_ms": ', '"ts_ms": "at ', 1).replace(', "member"', '", "member"', 1))
    return log


def _faults_not_utf8(rd: Path) -> Path:
    (rd / "faults.jsonl").write_bytes(b'{"id": "f\xff1"}\n')
    return rd / "faults.jsonl"


def _garbage_scenario(rd: Path) -> Path:
    (rd / "scenario.yaml").write_bytes(b"\xff\x00: [\n")
    return rd / "scenario.yaml"


NOT_READ_BY_ANALYZE = (_garbage_scenario,)  # scenario.yaml is for compare and trend; analyze reads only the logs
RUN_MUTATIONS = [_not_utf8_consumed, _truncated_parquet, _offset_as_text, _events_not_objects, _event_time_as_text,
                 _faults_not_utf8, _garbage_scenario]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mutate", RUN_MUTATIONS, ids=lambda f: f.__name__.lstrip("_"))
def test_a_mutated_run_directory_gets_a_verdict_or_one_error_line(mutate, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_ANALYSIS_SERVICE", "0")
    rd = _synthetic_run(tmp_path / "run")
    broken = mutate(rd)
    code, out, err = run_cli(["analyze", str(rd)], capsys)
    assert "Traceback" not in out + err, err
    if mutate in NOT_READ_BY_ANALYZE:  # the run's own verdict: its planted anomalies make it INVALID
        assert code == 1 and json.loads((rd / "report" / "summary.json").read_text())["valid"] is False, (code, err)
        return
    assert code == 2, (code, out, err)  # destroyed input is never a verdict, VALID least of all
    errors = [line for line in err.strip().splitlines() if not line.startswith("[")]  # "[1.2s] loading": progress
    assert len(errors) == 1 and broken.name in errors[0], err
