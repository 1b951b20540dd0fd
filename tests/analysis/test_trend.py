"""`kafka-chaos trend`: each scenario's figures across nightly runs, oldest first, in headless Chromium."""
import json
import shutil
import subprocess

import pytest
import yaml

from analysis.errors import InputError
from analysis.trend import collect, write
from harness.cli import main as kafka_chaos

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def night(root, day: int, scenario: str, valid=True, lost=0, dups=0, stable_ms=4000):
    run = root / f"night-{day}" / f"2026110{day}-020000-{scenario}-abc"
    (run / "report").mkdir(parents=True)
    (run / "scenario.yaml").write_text(yaml.safe_dump({"name": scenario, "consumer_group": {"assignor": "range"}}))
    (run / "report" / "summary.json").write_text(json.dumps({
        "valid": valid, "lost_records": lost, "duplicate_extra_deliveries": dups, "time_range_ms": [day * 86_400_000, 0],
        "faults": [{"id": "f-1", "time_to_stable_ms": stable_ms}], "anomaly_counts": {"lost": lost}, "rebalances": 2}))
    return run


def nights(root):
    for day, (valid, lost, stable) in enumerate([(True, 0, 4000), (True, 0, 4200), (False, 12, 31_000)], start=1):
        night(root, day, "static-bounce", valid, lost, dups=10 * day, stable_ms=stable)
        night(root, day, "dynamic-bounce")
    return [root / f"night-{d}" for d in (3, 1, 2)]  # given out of order: the page orders by time


def test_every_scenario_has_its_runs_oldest_first(tmp_path):
    trend = collect(nights(tmp_path))
    assert list(trend) == ["dynamic-bounce", "static-bounce"]
    rows = trend["static-bounce"]
    assert [r["valid"] for r in rows] == [True, True, False]
    assert [r["lost_records"] for r in rows] == [0, 0, 12] and [r["max_time_to_stable_s"] for r in rows] == [4.0, 4.2, 31.0]


def test_nothing_to_show_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="no run with a report/summary.json"):
        collect([tmp_path])
    assert kafka_chaos(["trend", str(tmp_path / "missing"), "--out", str(tmp_path / "t.html")]) == 2


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium")
def test_the_trend_page_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "out" / "trend.html"
    assert kafka_chaos(["trend", *map(str, nights(tmp_path / "runs")), "--out", str(page)]) == 0
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--user-data-dir=" + str(tmp_path / "profile"), "--dump-dom", page.resolve().as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    assert 'id="trend"' in dom and dom.count('class="scenario"') == 2
    static = dom.split('data-scenario="static-bounce"')[1]
    assert [w for w in ("valid", "invalid") if f'class="verdict {w}"' in static] == ["valid", "invalid"]
    assert static.index('class="verdict valid"') < static.index('class="verdict invalid"')  # the break, on the right
    for series in ("duplicate_extra_deliveries", "lost_records", "max_time_to_stable_s"):
        assert f'class="chart {series}"' in static
    assert static.count('class="point"') == 9 and static.count('class="trend-line"') == 3
