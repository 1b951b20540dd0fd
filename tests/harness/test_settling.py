"""The rule for a group that does not settle (harness/settling.py): its limit, its line, its lag."""
import json

import pytest

from harness.scenario import ScenarioError, parse_scenario
from harness.settling import GroupLog, finding_line, lag_by_partition, settled, stable_limit_s


def test_the_limit_grows_with_the_group_unless_the_scenario_sets_it():
    assert stable_limit_s(None, 2) == 61 and stable_limit_s(None, 500) == 310
    assert stable_limit_s(12.5, 500) == 12.5


@pytest.mark.parametrize("value", [0, -1, 7201, "soon"])
def test_a_limit_that_cannot_work_is_bad_input_naming_the_field(value):
    with pytest.raises(ScenarioError, match=r"run\.stable_timeout_s"):
        parse_scenario({"name": "x", "run": {"stable_timeout_s": value}}, "test")


def test_lag_names_only_the_partitions_behind():
    assert lag_by_partition({("t", 0): 10, ("t", 1): 5, ("u", 0): 3}, {("t", 0): 10, ("t", 1): 2}) == {"t:1": 3, "u:0": 3}


def test_the_rows_and_their_lines(tmp_path):
    log = GroupLog(tmp_path)
    log.described("join", {"state": "PREPARING_REBALANCE", "members": 1, "assigned": 0, "coordinator": 2})
    seen = {"state": "STABLE", "members": 3, "assigned": 6, "coordinator": 2}
    join = log.unsettled("join", 61, 4, 6, seen, None)
    drain = log.unsettled("drain", 180, 4, 6, seen, {"t:1": 3, "t:4": 7})
    never = log.unsettled("join", 61, 4, 6, None, None)
    log.close()
    rows = [json.loads(line) for line in (tmp_path / "group.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["described", "unsettled", "unsettled", "unsettled"] and rows[1] == join
    assert finding_line(join) == ("the group did not become stable within 61 s (last seen: STABLE, 3 of 4 members, "
                                  "6 of 6 partitions assigned)")
    assert finding_line(drain).startswith("the group had not caught up after 180 s: 10 records behind on 2 partitions")
    assert finding_line(never).endswith("(last seen: never described)")


def test_settled_reads_run_json_of_now_and_before():
    assert settled({"drained": True, "unsettled": []}) and settled({})
    assert not settled({"drained": False}) and not settled({"drained": True, "unsettled": ["x"]})
