"""report/index.html renders in headless Chromium (Debian's chromium) with its key elements, offline."""
import re
import subprocess

from analysis import analyze
from analysis_runs import Run
from browser import chromium, in_chromium


def eventful_run(root):
    r = Run(root, "jsonl")
    r.produce("t", 0, range(200)).produce("t", 1, range(200))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail="protocol=classic assignor=range")
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, [o for o in range(100) if o != 42], at=100, step=5)
    r.consume("a", "t", 1, range(100), at=100, step=5)
    r.event("a", "committed", 700, offsets={"t:0": 90, "t:1": 100}, generation=1)
    r.event("a", "revoked", 1000, ["t:0", "t:1"], generation=1).event("b", "revoked", 1000, [], generation=1)
    r.event("a", "assigned", 1500, ["t:1"], generation=2).event("b", "assigned", 1500, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(85, 200), at=1600, step=5)
    r.consume("a", "t", 1, range(100, 200), at=1600, step=5)
    r.event("b", "committed", 2300, offsets={"t:0": 200}, generation=2)
    r.event("a", "committed", 2300, offsets={"t:1": 200}, generation=2)
    r.event("a", "committed", 2400, offsets={"t:1": 150}, generation=2)
    r.fault("pause-kafka-2", 900, 1400).fault("cut-proxy-1", 2500, None, kind="proxy_down")
    return r


@in_chromium
def test_report_renders_in_headless_chromium(tmp_path, spark):
    rd = eventful_run(tmp_path / "run").write()
    s = analyze(rd, spark=spark, grace_ms=500)
    assert s["valid"] is False
    page = (rd / "report" / "index.html").resolve()
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the report must not load anything from the network"
    cmd = chromium(tmp_path / "profile")
    dom = subprocess.run(cmd + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert 'id="verdict"' in dom and "INVALID" in dom
    for element in ('id="figures"', 'id="anomalies"', 'id="timeline"', 'id="rate"', 'id="commits"', 'id="faults"',
                    'id="checks"', 'id="rebalances"', 'class="owner"', 'class="fault"', 'class="rebalance"',
                    'class="marker"', 'class="regression"'):
        assert element in dom, element
    for kind in ("lost", "skip", "duplicate", "commit_regression", "unhealed_fault"):
        assert f"anomaly {kind}" in dom, kind
    shot = tmp_path / "report.png"
    subprocess.run(cmd + ["--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000  # something was painted


def test_rate_line_drops_to_zero_across_bins_without_records():
    """A freeze leaves bins with no consumption; the line must fall to 0 there, not ramp across the gap."""
    from analysis.pages.report import rate_steps
    steps = rate_steps([(0, 50), (1, 40), (4, 60)])
    assert steps == [(0, 50), (1, 50), (1, 40), (2, 40), (2, 0), (3, 0), (3, 0), (4, 0), (4, 60), (5, 60)]
