"""Bad input gives one InputError whose message names the file and the column (issue 2 item 5, issue 3 item 7)."""
import json
import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis import InputError, analyze
from analysis.rundir.inputs import precheck
from analysis_runs import Run


def small_run(root, fmt):
    r = Run(root, fmt)
    r.produce("t", 0, range(10))
    r.consume("m1", "t", 0, range(10), at=100)
    return r


def rows(r, member="m1"):
    return [dict(x) for x in r.consumed[member]]


def write_jsonl(path, rows_):
    path.write_text("".join(json.dumps(x) + "\n" for x in rows_))


def check(rd, spark, *needles):
    with pytest.raises(InputError) as info:
        analyze(rd, spark=spark)
    msg = str(info.value)
    assert "\n" not in msg
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_missing_required_column_jsonl(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    rd = r.write()
    write_jsonl(rd / "consumed" / "m1.jsonl", [{k: v for k, v in x.items() if k != "member"} for x in rows(r)])
    check(rd, spark, "consumed/m1.jsonl:1", "required column 'member' is missing")


def test_missing_required_column_parquet(tmp_path, spark):
    r = small_run(tmp_path / "run", "parquet")
    rd = r.write()
    pq.write_table(pq.read_table(rd / "consumed" / "m1.parquet").drop(["offset"]), rd / "consumed" / "m1.parquet")
    check(rd, spark, "consumed/m1.parquet", "required column 'offset' is missing")


def test_wrong_type_jsonl(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    rd = r.write()
    bad = rows(r)
    bad[2]["offset"] = "abc"
    write_jsonl(rd / "consumed" / "m1.jsonl", bad)
    check(rd, spark, "consumed/m1.jsonl:3", "column 'offset'", '"abc"', "expected int64")


def test_wrong_type_parquet(tmp_path, spark):
    r = small_run(tmp_path / "run", "parquet")
    rd = r.write()
    t = pq.read_table(rd / "produced" / "producer-0.parquet")
    t = t.set_column(t.column_names.index("acked_at_ms"), "acked_at_ms", pa.array([str(v) for v in t.column("acked_at_ms").to_pylist()]))
    pq.write_table(t, rd / "produced" / "producer-0.parquet")
    check(rd, spark, "produced/producer-0.parquet", "column 'acked_at_ms' has type string, expected int64")


def test_null_required_value_parquet(tmp_path, spark):
    r = small_run(tmp_path / "run", "parquet")
    r.consumed["m1"][4]["member"] = None
    rd = r.write()
    check(rd, spark, "consumed/m1.parquet", "required column 'member' is null in row 5")


def test_negative_offset_parquet(tmp_path, spark):
    """The footer's minimum proves nothing here, so the rows are checked: the error names the row."""
    r = small_run(tmp_path / "run", "parquet")
    r.consumed["m1"][6]["offset"] = -3
    check(r.write(), spark, "consumed/m1.parquet", "column 'offset' has -3, expected a value >= 0", "row 7")


def test_a_footer_without_statistics_proves_nothing(tmp_path, spark):
    r = small_run(tmp_path / "run", "parquet")
    r.consumed["m1"][2]["member"] = None
    rd = r.write()
    path = rd / "consumed" / "m1.parquet"
    pq.write_table(pq.read_table(path), path, write_statistics=False)
    check(rd, spark, "consumed/m1.parquet", "required column 'member' is null in row 3")


def test_statistics_prove_the_rules_of_a_clean_file(tmp_path):
    """What the statistics prove is not checked row by row (inputs.bad_sql): every required column without
    nulls, and the minimums of partition and offset."""
    from analysis.rundir.inputs import _parquet_footer, bad_sql
    rd = small_run(tmp_path / "run", "parquet").write()
    proven = _parquet_footer(rd, "consumed", rd / "consumed" / "m1.parquet").proven
    assert {("topic", 2), ("partition", 2), ("partition", 4), ("offset", 2), ("offset", 4), ("member", 2),
            ("consumed_at_ms", 2)} <= proven
    assert bad_sql("consumed", "parquet", proven) == "CAST(NULL AS INT)"
    assert "`status` NOT IN" in bad_sql("produced", "parquet", _parquet_footer(rd, "produced", rd / "produced" / "producer-0.parquet").proven)


def test_missing_folder(tmp_path, spark, fmt):
    rd = small_run(tmp_path / "run", fmt).write()
    for p in (rd / "consumed").iterdir():
        p.unlink()
    (rd / "consumed").rmdir()
    check(rd, spark, "consumed/", "folder is missing")


def test_empty_folder(tmp_path, spark, fmt):
    rd = small_run(tmp_path / "run", fmt).write()
    for p in (rd / "produced").iterdir():
        p.unlink()
    (rd / "produced" / "notes.txt").write_text("not a data file")
    check(rd, spark, "produced/", "no *.parquet or *.jsonl files")


def test_unreadable_parquet(tmp_path, spark):
    rd = small_run(tmp_path / "run", "parquet").write()
    (rd / "consumed" / "m2.parquet").write_bytes(b"this is not parquet")
    check(rd, spark, "consumed/m2.parquet", "unreadable Parquet file")


def test_unreadable_permission():
    """A record log the analysing user may not read. Root reads files whatever their mode, and CI runs as root, so the
    check that analyze makes before Spark starts (inputs.precheck) runs in a child that drops to nobody first."""
    shared = Path(tempfile.mkdtemp(prefix="unreadable-"))  # tmp_path's parents are closed to other users
    try:
        shared.chmod(0o755)
        rd = small_run(shared / "run", "jsonl").write()
        (rd / "consumed" / "m1.jsonl").chmod(0)
        assert error_as_nobody(precheck, rd, "consumed") == "InputError: consumed/m1.jsonl: unreadable file (permission denied)"
        assert error_as_nobody(precheck, rd, "produced") == "no error"
    finally:
        shutil.rmtree(shared)


def error_as_nobody(fn, *args) -> str:
    """What fn(*args) raised ("no error" if nothing), called in a forked child running as nobody (as the current
    user when that is not root). Forked, not executed: the interpreter may live where nobody cannot reach it."""
    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            fn(*args)
            said = "no error"
        except BaseException as exc:  # noqa: BLE001  everything goes back to the parent as text
            said = f"{type(exc).__name__}: {exc}"
        os.write(write, said.encode())
        os._exit(0)  # no cleanup of the parent's pytest session in the child
    os.close(write)
    with os.fdopen(read) as fh:
        said = fh.read()
    os.waitpid(pid, 0)
    return said


def test_invalid_json_line_in_the_middle(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    rd = r.write()
    lines = (rd / "consumed" / "m1.jsonl").read_text().splitlines()
    lines[4] = lines[4][:20]
    (rd / "consumed" / "m1.jsonl").write_text("\n".join(lines) + "\n")
    check(rd, spark, "consumed/m1.jsonl:5", "not valid JSON")


def test_unknown_status(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    r.produced[3]["status"] = "maybe"
    rd = r.write()
    check(rd, spark, "produced/producer-0.jsonl:4", "column 'status'", "maybe")


def test_bad_event(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    r.event("m1", "assigned", 50, ["t:0"], generation=1)
    r.event("m1", "committed", 200, offsets={"t:0": "ten"})
    rd = r.write()
    check(rd, spark, "events/m1.jsonl:2", "column 'offsets'", "expected an integer offset")


def test_bad_fault(tmp_path, spark):
    r = small_run(tmp_path / "run", "jsonl")
    r.fault("f1", 10, 20)
    rd = r.write()
    (rd / "faults.jsonl").write_text(json.dumps({"id": "f1", "kind": "pause", "target": "k1"}) + "\n")
    check(rd, spark, "faults.jsonl:1", "required column 'injected_at_ms' is missing")


def test_missing_run_dir(tmp_path, spark):
    check(tmp_path / "nope", spark, "nope", "does not exist")
