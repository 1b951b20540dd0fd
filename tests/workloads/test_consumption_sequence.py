"""Task hD (issue 23 item 1): a member's consumption sequence n goes on across a restart of its process, so that
n orders all of a member's consumed rows (a restarted process appends to the same log)."""
import json

from workloads.history import JsonlLog
from workloads.app import next_sequence


def test_a_new_log_starts_at_zero(tmp_path):
    assert next_sequence(tmp_path / "member-1.jsonl") == 0


def test_a_restarted_member_goes_on_after_its_last_whole_row(tmp_path):
    log = tmp_path / "member-1.jsonl"
    rows = "".join(json.dumps({"offset": o, "n": o + 10}) + "\n" for o in range(500))
    log.write_text(rows + '{"offset": 500, "n": 5')  # killed while writing: the last line cut short
    JsonlLog(log).close()  # what a restarted member does first: the cut-short line is dropped
    assert next_sequence(log) == 510


def test_a_log_written_without_n_starts_at_zero(tmp_path):
    log = tmp_path / "member-1.jsonl"
    log.write_text(json.dumps({"offset": 0}) + "\n")
    assert next_sequence(log) == 0
