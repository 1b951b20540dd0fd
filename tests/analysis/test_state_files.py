"""analysis/rundir/state.py: a stateful run's state files read against the contract, whole (pyarrow) when they read
so, else line by line: a bad line is one error naming its file and line, a killed member's last line cut short is
dropped, and either way the rows are the same."""
from __future__ import annotations

import json

import pytest

from analysis.errors import InputError
from analysis.rundir import state

ROW = {"ts_ms": 1, "member": "a", "topic": "t", "partition": 0, "key": "k0", "offset": 0, "prev_offset": -1,
       "count": 1, "sum": 0, "generation": 1}


def run(tmp_path, member_lines, final=({"partition": 0, "key": "k0", "count": 1, "sum": 0, "last_offset": 0},)):
    (tmp_path / "state").mkdir(parents=True)
    (tmp_path / "state" / "a.jsonl").write_text("".join(member_lines))
    (tmp_path / "state" / "final.jsonl").write_text("".join(json.dumps(f) + "\n" for f in final))
    return tmp_path


def line(**changes):
    return json.dumps({**ROW, **changes}) + "\n"


def test_good_files_read_whole_give_the_rows_the_lines_hold(tmp_path):
    files = state.read(run(tmp_path, [line(), line(offset=1, prev_offset=0, count=2)]))
    assert [(r["offset"], r["count"]) for r in files.rows.to_pylist()] == [(0, 1), (1, 2)] and files.members == ["a"]
    assert files.final.to_pylist()[0]["key"] == "k0" and files.final.to_pylist()[0].get("member") is None


def test_a_line_that_breaks_a_rule_is_one_error_naming_its_file_and_line(tmp_path):
    with pytest.raises(InputError, match=r"state/a.jsonl:2: column 'count' has 0, expected a value >= 1"):
        state.read(run(tmp_path, [line(), line(count=0)]))


def test_a_line_of_the_wrong_type_or_not_json_is_named_too(tmp_path):
    with pytest.raises(InputError, match=r"state/a.jsonl:1: column 'offset' has \"x\""):
        state.read(run(tmp_path, [line(offset="x")]))
    with pytest.raises(InputError, match=r"state/a.jsonl:2: not JSON"):
        state.read(run(tmp_path / "b", [line(), "{oops\n"]))


def test_a_killed_members_last_line_cut_short_is_dropped(tmp_path):
    files = state.read(run(tmp_path, [line(), line(offset=1)[:30]]))
    assert [r["offset"] for r in files.rows.to_pylist()] == [0]


def test_a_streams_members_client_ids_in_group_states_are_its_name():
    """group-states.jsonl keys a streams group's members by client.id (`member-2-StreamThread-1-consumer`): read as
    the member's name by kafkanet.client_ids.same_client, two threads' tasks merged, `member-20` never `member-2`."""
    from analysis.rundir.history import by_member_name
    rows = [{"kind": "state", "assignments": {"member-2-StreamThread-1-consumer": ["t:1"],
                                              "member-2-StreamThread-2-consumer": ["t:0"],
                                              "member-20-StreamThread-1-consumer": ["t:2"], "other": ["t:3"]},
             "member_epochs": {"member-2-StreamThread-1-consumer": 7, "member-2-StreamThread-2-consumer": 5},
             "member_ids": {"abc": "member-2-StreamThread-1-consumer"}, "standby_tasks": None}]
    by_member_name(rows, {"member-2", "member-20"})
    assert rows[0]["assignments"] == {"member-2": ["t:0", "t:1"], "member-20": ["t:2"], "other": ["t:3"]}
    assert rows[0]["member_epochs"] == {"member-2": 5} and rows[0]["member_ids"] == {"abc": "member-2"}
