"""kafka-chaos compact: JSONL record logs rewritten as Parquet lose nothing and change no verdict."""
import json
import shutil

import pyarrow.parquet as pq
import pytest

from analysis import InputError, analyze
from analysis.rundir.compact import compact
from analysis_runs import Run, known_run

from test_analysis_checks import _strip


def synthetic(root):
    from benchmarks.synth import Plan, generate
    generate(root, Plan(records=20_000, fmt="jsonl", seed=11))
    return root


def same_summary(a, b):
    a, b = _strip(a), _strip(b)
    for s in (a, b):
        s.pop("run_dir"), s.pop("input")
    return a == b


def test_compacted_run_gives_the_same_summary(tmp_path, spark):
    """Every anomaly type of the synthetic run, before and after; the JSONL files are gone."""
    before = synthetic(tmp_path / "jsonl")
    after = tmp_path / "parquet"
    shutil.copytree(before, after)
    done = compact(after)
    assert sorted(done.converted) == ["consumed/member-0.jsonl", "consumed/member-1.jsonl", "consumed/member-2.jsonl",
                                      "produced/producer-0.jsonl"]
    assert done.left == {} and done.bytes_after < done.bytes_before / 4
    assert not list(after.glob("*/*.jsonl.partial")) and not list((after / "consumed").glob("*.jsonl"))
    assert list((after / "events").glob("*.jsonl")), "events stay JSONL"
    s_json, s_parquet = analyze(before, spark=spark), analyze(after, spark=spark)
    assert s_parquet["input"]["formats"] == ["parquet"]
    assert s_parquet["valid"] is False and sum(n or 0 for n in s_parquet["anomaly_counts"].values()) > 0
    assert same_summary(s_json, s_parquet)


def test_every_row_column_and_the_row_order_are_kept(tmp_path):
    r = known_run(tmp_path / "run", "jsonl")
    for i, row in enumerate(r.produced):
        if row["status"] != "ok":
            row["error"] = f"timed out {i}"   # an extra column on a few rows only
    rd = r.write()
    original = [json.loads(line) for line in (rd / "consumed" / "m1.jsonl").read_text().splitlines()]
    compact(rd)
    # compaction writes every column of the contract: this log predates `n`, which reads as null (and such a run's
    # backwards is judged by log order, as before)
    assert pq.read_table(rd / "consumed" / "m1.parquet").to_pylist() == [{**row, "n": None} for row in original]
    produced = pq.read_table(rd / "produced" / "producer-0.parquet")
    assert produced.schema.field("offset").type == "int64" and produced.schema.field("partition").type == "int32"
    assert [x for x in produced.column("error").to_pylist() if x] == [row["error"] for row in r.produced if "error" in row]


@pytest.mark.parametrize("bad_line, message", [
    ('{"topic": "t", "partition": 0, "offset": "7", "member": "m1", "consumed_at_ms": 5}', "column 'offset'"),
    ('{"topic": "t", "partition": 0, "member": "m1", "consumed_at_ms": 5}', "required column 'offset' is missing"),
    ('{"topic": "t", "partition": 0, "offs', "not valid JSON"),
])
def test_a_file_the_analysis_would_report_stays_jsonl(tmp_path, spark, bad_line, message):
    r = Run(tmp_path / "run", "jsonl")
    r.produce("t", 0, range(10)).consume("m1", "t", 0, range(10), at=100).consume("m2", "t", 0, range(5), at=200)
    rd = r.write()
    path = rd / "consumed" / "m1.jsonl"
    path.write_text(path.read_text() + bad_line + "\n" + path.read_text().splitlines()[0] + "\n")
    done = compact(rd)
    assert list(done.left) == ["consumed/m1.jsonl"] and path.is_file()
    assert sorted(done.converted) == ["consumed/m2.jsonl", "produced/producer-0.jsonl"]
    with pytest.raises(InputError, match="consumed/m1.jsonl:11"):
        analyze(rd, spark=spark)
    assert message in str(pytest.raises(InputError, analyze, rd, spark=spark).value)


def test_an_interrupted_compaction_is_finished_not_counted_twice(tmp_path, spark):
    rd = known_run(tmp_path / "run", "jsonl").write()
    saved = (rd / "consumed" / "m1.jsonl").read_bytes()
    compact(rd)
    (rd / "consumed" / "m1.jsonl").write_bytes(saved)   # as if it stopped after the rename, before the unlink
    (rd / "consumed" / "other.parquet").write_bytes((rd / "consumed" / "m2.parquet").read_bytes())
    (rd / "consumed" / "other.jsonl").write_bytes(saved)  # a name clash with a Parquet file of other rows
    done = compact(rd)
    assert done.converted == ["consumed/m1.jsonl"] and not (rd / "consumed" / "m1.jsonl").exists()
    assert done.left == {"consumed/other.jsonl": "consumed/other.parquet exists already"}


def test_cli_compact(tmp_path, capsys):
    from analysis import cli
    rd = known_run(tmp_path / "run", "jsonl").write()
    assert cli.main(["compact", str(rd)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compacted 3 file(s), 93 rows: ") and "kB of Parquet" in out
    assert cli.main(["compact", str(tmp_path / "nowhere")]) == 2
    assert "no produced/ or consumed/ folder" in capsys.readouterr().err
