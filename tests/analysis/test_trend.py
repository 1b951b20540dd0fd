"""`kafka-chaos trend`: each series' figures across nightly runs, oldest first, keyed by what was run; points outside
their series' last nights marked on the page and listed in trend.json; checks that did not run shown as not run;
the page in headless Chromium."""
import json
import subprocess

import pytest
import yaml

from analysis.errors import InputError
from analysis.pages.trend import collect, outliers, write
from harness.cli import main as kafka_chaos
from harness.scenario import load_scenario, unique_names
from browser import chromium, in_chromium


def night(root, day: int, scenario: str, valid=True, lost=0, dups=0, stable_ms=4000, assignor="range", source=None,
          suffix="abc123", version=None, checks=None):
    run = root / f"night-{day:02}" / f"202611{day:02}-020000-{scenario}-{suffix}"
    (run / "report").mkdir(parents=True)
    settings = unique_names({"name": scenario, "consumer_group": {"assignor": assignor, "client": "librdkafka",
                                                                  "version": version, "protocol": "classic",
                                                                  "static_membership": "static" in scenario},
                             "topic": {"name": "chaos", "partitions": 6}}, suffix)
    (run / "scenario.yaml").write_text(yaml.safe_dump(settings))
    if source:
        (run / "run.json").write_text(json.dumps({"run_dir": str(run), "source": source}))
    (run / "report" / "summary.json").write_text(json.dumps({
        "valid": valid, "lost_records": lost, "duplicate_extra_deliveries": dups, "time_range_ms": [day * 86_400_000, 0],
        "faults": [{"id": "f-1", "time_to_stable_ms": stable_ms}], "anomaly_counts": {"lost": lost, "duplicate": dups},
        "checks": checks or {"lost": {"ran": True, "status": "ran"}, "duplicate": {"ran": True, "status": "ran"}},
        "rebalances": 2}))
    return run


def nights(root):
    for day, (valid, lost, stable) in enumerate([(True, 0, 4000), (True, 0, 4200), (False, 12, 31_000)], start=1):
        night(root, day, "static-bounce", valid, lost, dups=10 * day, stable_ms=stable)
        night(root, day, "dynamic-bounce")
    return [root / f"night-{d:02}" for d in (3, 1, 2)]  # given out of order: the page orders by time


def only(trend, source):
    [series] = [s for s in trend.values() if s.identity["source"] == source]
    return series


def test_every_series_has_its_runs_oldest_first(tmp_path):
    trend = collect(nights(tmp_path))
    assert sorted(s.identity["source"] for s in trend.values()) == ["dynamic-bounce", "static-bounce"]  # no run.json
    rows = only(trend, "static-bounce").rows
    assert [r["valid"] for r in rows] == [True, True, False]
    assert [r["lost_records"] for r in rows] == [0, 0, 12] and [r["max_time_to_stable_s"] for r in rows] == [4.0, 4.2, 31.0]
    assert only(trend, "static-bounce").identity["membership"] == "static"


def test_a_series_is_what_was_run_not_the_scenario_name(tmp_path):
    source = "tests/cluster/test_matrix.py::test_matrix[range-static]"
    night(tmp_path, 1, "default", assignor="range", source=source, suffix="0a0b0c")
    night(tmp_path, 2, "default", assignor="range", source=source, suffix="ffee01")  # new unique names: same series
    night(tmp_path, 1, "default", assignor="roundrobin", source=source, suffix="123456")   # another matrix cell
    night(tmp_path, 1, "kafka-7026", version="2.2.0", source="scenarios/zoo/kafka-7026.yaml")  # a zoo release each
    night(tmp_path, 1, "kafka-7026", version="2.3.0", source="scenarios/zoo/kafka-7026.yaml", suffix="654321")
    trend = collect([tmp_path])
    assert len(trend) == 4
    cells = sorted((s.identity["assignor"], len(s.rows)) for s in trend.values() if s.identity["source"] == source)
    assert cells == [("range", 2), ("roundrobin", 1)]
    releases = sorted(s.identity["client_version"] for s in trend.values() if "zoo" in s.identity["source"])
    assert releases == ["2.2.0", "2.3.0"]


def test_the_unique_suffixes_of_a_run_do_not_change_its_settings_hash(tmp_path):
    catalog = load_scenario("scenarios/pattern-new-topic.yaml").settings()  # a pattern, topics, a topic_create fault
    hashes = set()
    for suffix in ("a1b2c3", "d4e5f6"):
        run = tmp_path / suffix
        (run / "report").mkdir(parents=True)
        (run / "scenario.yaml").write_text(yaml.safe_dump(unique_names(catalog, suffix)))
        (run / "report" / "summary.json").write_text(json.dumps({"valid": True}))
        [series] = collect([run]).values()
        hashes.add(series.identity["settings"])
    assert len(hashes) == 1
    changed = tmp_path / "changed"
    (changed / "report").mkdir(parents=True)
    (changed / "scenario.yaml").write_text(yaml.safe_dump(unique_names({**catalog, "producer": {"records": 7}}, "a1b2c3")))
    (changed / "report" / "summary.json").write_text(json.dumps({"valid": True}))
    assert [s.identity["settings"] for s in collect([changed]).values()] != list(hashes)



def test_a_setting_added_later_and_left_unset_keeps_the_series(tmp_path):
    """scenario.yaml of a newer harness writes every optional setting, null when unset (e.g. admin_probe)."""
    def settings_of(name: str, scenario: dict) -> str:
        run = tmp_path / name
        (run / "report").mkdir(parents=True)
        (run / "scenario.yaml").write_text(yaml.safe_dump(scenario))
        (run / "report" / "summary.json").write_text(json.dumps({"valid": True}))
        [series] = collect([run]).values()
        return series.identity["settings"]
    old = {"name": "n", "producer": {"records": 10}, "consumer_group": {"client": "librdkafka", "members": 2}}
    new = {**old, "consumer_group": {**old["consumer_group"], "admin_probe": None}, "faults": None}
    assert settings_of("old", old) == settings_of("new", new)
    assert settings_of("set", {**old, "faults": []}) != settings_of("old2", old)  # a value, even empty, is a setting

def ten_quiet_nights_then(tmp_path, lost_last: int):
    for day in range(1, 12):
        night(tmp_path, day, "static-bounce", lost=lost_last if day == 11 else day % 3, stable_ms=4000 + day % 2 * 100,
              source="scenarios/static-bounce.yaml")


def test_a_point_outside_its_series_last_nights_is_marked_and_listed(tmp_path):
    ten_quiet_nights_then(tmp_path / "nightly", lost_last=40)
    page = tmp_path / "nightly" / "trend.html"
    assert kafka_chaos(["trend", str(tmp_path / "nightly"), "--out", str(page)]) == 0
    listed = json.loads(page.with_suffix(".json").read_text())
    [outlier] = listed["outliers"]
    assert outlier["figure"] == "lost_records" and outlier["value"] == 40 and (outlier["min"], outlier["max"]) == (0, 2)
    assert outlier["nights"] == 10 and outlier["night"].endswith("night-11") == listed["newest_night"].endswith("night-11")
    assert "scenarios/static-bounce.yaml" in outlier["text"] and "lost records 40 outside 0–2" in outlier["text"]
    assert page.read_text().count("class='point outlier'") == 1 and "class=outliers" in page.read_text()


def test_a_point_inside_its_series_range_or_with_too_few_nights_is_no_outlier(tmp_path):
    ten_quiet_nights_then(tmp_path, lost_last=2)
    assert outliers(collect([tmp_path])) == []
    young = tmp_path / "young"
    for day, lost in ((1, 0), (2, 0), (3, 50)):   # two earlier nights only: not enough to call a point an outlier
        night(young, day, "static-bounce", lost=lost)
    assert outliers(collect([young])) == []


def test_a_check_that_did_not_run_reads_not_run_in_both_summary_shapes(tmp_path):
    new = night(tmp_path, 1, "static-bounce", checks={"lost": {"ran": False, "status": "not_run", "reason": "no events"},
                                                     "duplicate": {"ran": True, "status": "ran"}})
    old = night(tmp_path, 2, "static-bounce", checks={"lost": {"status": "skipped", "reason": "no events"},
                                                     "duplicate": {"status": "ran", "count": 0}})
    for run, count in ((new, None), (old, 0)):   # the new shape writes a null count, the old one a 0
        summary = json.loads((run / "report" / "summary.json").read_text())
        summary["anomaly_counts"]["lost"] = count
        (run / "report" / "summary.json").write_text(json.dumps(summary))
    rows = only(collect([tmp_path]), "static-bounce").rows
    assert [r["lost_records"] for r in rows] == [None, None] and [r["lost"] for r in rows] == [None, None]
    assert [r["not_run_figures"] for r in rows] == [{"lost_records": "no events"}] * 2
    assert [r["duplicate_extra_deliveries"] for r in rows] == [0, 0]
    page = tmp_path / "trend.html"
    write([tmp_path], page)
    assert page.read_text().count("class=not-run") == 2
    assert kafka_chaos(["compare", str(new), str(old), "--out", str(tmp_path / "cmp")]) == 0
    table = (tmp_path / "cmp" / "compare.md").read_text().splitlines()
    header = [c.strip() for c in table[0].split("|")]
    for line in table[2:]:
        cells = [c.strip() for c in line.split("|")]
        assert cells[header.index("lost")] == "not run" and cells[header.index("duplicate")] == "0"
        assert cells[header.index("member fatal")] == "not run"   # absent from the summary: never verified


def test_nothing_to_show_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="no run with a report/summary.json"):
        collect([tmp_path])
    assert kafka_chaos(["trend", str(tmp_path / "missing"), "--out", str(tmp_path / "t.html")]) == 2


def test_out_on_a_folder_or_a_file_is_bad_input(tmp_path, capsys):
    runs = nights(tmp_path / "runs")
    (tmp_path / "taken").mkdir()
    assert kafka_chaos(["trend", *map(str, runs), "--out", str(tmp_path / "taken")]) == 2
    assert "is a directory" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert kafka_chaos(["compare", str(next(runs[0].iterdir())), "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "is a file" in err and len(err.strip().splitlines()) == 1


@in_chromium
def test_the_trend_page_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "out" / "trend.html"
    assert kafka_chaos(["trend", *map(str, nights(tmp_path / "runs")), "--out", str(page)]) == 0
    cmd = chromium(tmp_path / "profile", "--dump-dom", page.resolve().as_uri())
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    assert 'id="trend"' in dom and dom.count('class="series"') == 2
    static = dom.split('data-source="static-bounce"')[1]
    assert [w for w in ("valid", "invalid") if f'class="verdict {w}"' in static] == ["valid", "invalid"]
    assert static.index('class="verdict valid"') < static.index('class="verdict invalid"')  # the break, on the right
    for series in ("duplicate_extra_deliveries", "lost_records", "max_time_to_stable_s"):
        assert f'class="chart {series}"' in static
    assert static.count('class="point"') == 9 and static.count('class="trend-line"') == 3


def test_the_page_names_a_zoo_bug_that_moved(tmp_path):
    """Each night's zoo.json: the bug zoo's table on the page, the night a bug moved marked and its reason listed."""
    import json as _json

    from analysis.pages.trend import write
    reason = "KAFKA-1: the signature showed on the fixed release 3.2.1 in 1 of 3 runs"
    for night, gate, shown in (("20261124-0217", [], 0), ("20261125-0217", [reason], 1)):
        d = tmp_path / "nightly" / night
        (d / "zoo" / "r1" / "report").mkdir(parents=True)
        (d / "zoo" / "r1" / "report" / "summary.json").write_text(_json.dumps({"valid": True, "anomaly_counts": {}, "checks": {}}))
        (d / "zoo.json").write_text(_json.dumps({"date": night, "bugs": [{"bug": "KAFKA-1", "status": "reproduced", "gate": gate,
            "affected": {"side": "affected", "version": "3.2.0", "shown": 3, "started": 3},
            "fixed": {"side": "fixed", "version": "3.2.1", "shown": shown, "started": 3}}]}))
    page = write([tmp_path / "nightly"], tmp_path / "trend.html")
    text = page.read_text()
    assert "zoo-cell moved" in text and reason in text and "1 of 3 ✗" in text
    assert _json.loads((tmp_path / "trend.json").read_text())["zoo_moved"] == [reason]
