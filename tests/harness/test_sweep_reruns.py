"""Issue 51: a page says which figures a rerun moved, and by how much, from the sweep's record: the rows a rerun
replaced stay in cells.jsonl, and each point it measured again is summed up before and after by the curve's own rule."""
from harness.sweep import reruns

SINCE = "2026-11-29T09:49:17+00:00"


def row(repeat, stable, measured_at, status="ok", members=10, style="eager-range", stop=None):
    return {"cell": f"librdkafka-{members}m-4ppm-{style}-crash-r{repeat}", "client": "librdkafka",
            "partitions_per_member": 4, "style": style, "trigger": "crash", "members": members, "repeat": repeat,
            "status": status, "measured_at": measured_at, "time_to_stable_ms": stable, "unserved_longest_ms": stable,
            "unserved_partition_s": 40.0, "stop_delay_ms": stop}


def test_each_point_measured_again_is_its_figures_before_and_after_and_the_change_of_the_median():
    old = [row(r, 11000 + 100 * r, "2026-11-28T10:00:00+00:00") for r in (1, 2, 3)]
    new = [row(r, 10500 + 100 * r, "2026-11-29T10:00:00+00:00", stop=200 * r) for r in (1, 2, 3)]
    untouched = row(1, 9000, "2026-11-28T10:00:00+00:00", members=50)  # matched, never measured again: in no side
    [changed] = reruns.changes(old + [untouched] + new, {"librdkafka-[15]0m-*-crash-*": SINCE})
    assert (changed["members"], changed["valid_before"], changed["valid_after"]) == (10, 3, 3)
    assert changed["time_to_stable_ms_before_median"] == 11200 and changed["time_to_stable_ms_after_median"] == 10700
    assert changed["time_to_stable_ms_change"] == -500 and changed["unserved_partition_s_change"] == 0
    assert changed["stop_delay_ms_before_n"] == 0 and changed["stop_delay_ms_after_median"] == 400
    table = reruns.markdown([changed])
    assert "| librdkafka | crash | eager-range | 10 | 3 → 3 | 11.2 [11.1–11.3] n=3 | 10.7 [10.6–10.8] n=3 | −0.5 |" in table
    assert table.rstrip().endswith("| 400 [200–600] n=3 |")


def test_an_invalid_or_unsettled_cell_enters_neither_side_and_under_three_values_there_is_no_change():
    old = [row(1, 11000, "2026-11-28T10:00:00+00:00"), row(2, 11100, "2026-11-28T10:00:00+00:00"),
           row(3, None, "2026-11-28T10:00:00+00:00", status="unsettled")]
    new = [row(1, 10000, SINCE), row(2, 10100, SINCE, status="invalid"), row(3, 10200, SINCE)]
    [changed] = reruns.changes(old + new, {"*": SINCE})
    assert (changed["valid_before"], changed["valid_after"], changed["cells"]) == (2, 2, 3)
    assert changed["time_to_stable_ms_change"] is None
    assert "| 2 → 2 | 11, 11.1 n=2 | 10, 10.2 n=2 | – |" in reruns.markdown([changed])


def test_a_cell_the_rerun_has_not_reached_yet_is_left_out_and_a_page_block_is_rewritten():
    rows = [row(1, 11000, "2026-11-28T10:00:00+00:00")]
    assert reruns.changes(rows, {"*": SINCE}) == []
    page = "a\n<!-- reruns -->\nold\n<!-- /reruns -->\nb\n"
    assert reruns.fill(page, []) == "a\n<!-- reruns -->\n(no cell measured again)\n<!-- /reruns -->\nb\n"


def test_a_figure_of_zero_is_shown_as_zero_not_as_missing():
    """A rerun whose cells left no partition unserved: 0 before and after, a change of ±0."""
    rows = [{**row(r, 11000, "2026-11-28T10:00:00+00:00"), "unserved_partition_s": 0.0} for r in (1, 2, 3)]
    rows += [{**row(r, 10000, SINCE), "unserved_partition_s": 0.0} for r in (1, 2, 3)]
    [changed] = reruns.changes(rows, {"*": SINCE})
    assert reruns.side(changed, "unserved_partition_s", "before") == "0 n=3"
    assert reruns.change_text(changed, "unserved_partition_s") == "±0"
