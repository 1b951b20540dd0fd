"""A restarted member appends to its log; half a line left by the killed one must not end up mid-file."""
import json

import pytest

from workloads.history import JsonlLog


@pytest.mark.parametrize("before, kept", [
    ('{"offset":1}\n{"offset":2}\n{"off', '{"offset":1}\n{"offset":2}\n'),
    ('{"offset":1}\n', '{"offset":1}\n'),
    ('{"offs', ''),
    ('{"offset":1}\n' + "x" * 200_000, '{"offset":1}\n'),  # a fragment longer than one read
])
def test_a_reopened_log_drops_the_unterminated_tail(tmp_path, before, kept):
    path = tmp_path / "consumed" / "member-1.jsonl"
    path.parent.mkdir()
    path.write_text(before)
    log = JsonlLog(path)
    log.append({"offset": 3})
    log.close()
    assert path.read_text() == kept + '{"offset":3}\n'
    assert [json.loads(line)["offset"] for line in path.read_text().splitlines()][-1] == 3


def test_a_new_log_is_created(tmp_path):
    log = JsonlLog(tmp_path / "events" / "m.jsonl")
    log.append({"kind": "started"})
    log.close()
    assert (tmp_path / "events" / "m.jsonl").read_text() == '{"kind":"started"}\n'
