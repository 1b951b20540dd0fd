"""Issue 40: `kafka-chaos sweep --publish PAGE` copies a sweep's curve, CSVs and plots beside the page and rewrites
only the page's curve block; a page without the block, or a sweep without a curve, is bad input (exit 2) and nothing
is written."""
import json

import yaml

from harness.cli import main
from harness.sweep.spec import load_sweep

PAGE = """# The cost

Prose the author wrote.

<!-- curve: sweeps/x/curve.md -->
| old | table |
<!-- /curve -->

More prose.
"""


def sweep_out(tmp_path):
    """A finished sweep's folder, as the runner leaves it, and its sweep file (tmp_path/x.yaml)."""
    source = tmp_path / "x.yaml"
    source.write_text(yaml.safe_dump({"name": "x", "grid": {"members": [10], "styles": ["eager-range"],
                                                            "triggers": ["join"], "clients": ["librdkafka"]}}))
    out = tmp_path / "sweeps" / "x"
    out.mkdir(parents=True)
    (out / "sweep.json").write_text(json.dumps({"name": "x", "fingerprint": load_sweep(source).fingerprint()}))
    (out / "curve.md").write_text("### librdkafka, 4 partitions a member: join\n\n| style | members |\n|---|---|\n| eager-range | 10 |\n")
    (out / "curve.csv").write_text("style,members\neager-range,10\n")
    (out / "cells.csv").write_text("cell\nc1\n")
    (out / "librdkafka-4ppm-time_to_stable_ms.png").write_bytes(b"\x89PNG")
    (out / "cells.jsonl").write_text(json.dumps({"cell": "c1", "status": "ok", "members": 10, "seconds": 90.0}) + "\n")
    return out


def test_publish_rewrites_the_block_and_copies_the_files_beside_the_page(tmp_path, capsys):
    out = sweep_out(tmp_path)
    page = tmp_path / "docs" / "cost.md"
    page.parent.mkdir()
    page.write_text(PAGE)
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 0
    text = page.read_text()
    assert "| old | table |" not in text and "| eager-range | 10 |\n<!-- /curve -->" in text
    assert text.startswith("# The cost\n\nProse the author wrote.") and text.endswith("More prose.\n")
    copied = sorted(p.name for p in (tmp_path / "docs" / "cost").iterdir())
    assert copied == ["cells.csv", "curve.csv", "curve.md", "librdkafka-4ppm-time_to_stable_ms.png"]
    assert "1.5 min of cells (10 members 1.5 min)" in capsys.readouterr().out
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 0
    assert page.read_text() == text  # twice is once


def test_a_page_without_the_block_or_a_sweep_without_a_curve_is_refused(tmp_path, capsys):
    out = sweep_out(tmp_path)
    page = tmp_path / "plain.md"
    page.write_text("# no block\n")
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 2
    assert "has no '<!-- curve: ... -->'" in capsys.readouterr().err
    assert page.read_text() == "# no block\n" and not (tmp_path / "plain").exists()
    (out / "curve.md").unlink()
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 2
    assert "holds no curve.md yet" in capsys.readouterr().err
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({"name": "x", "grid": {"members": [50], "styles": ["eager-range"],
                                                                          "triggers": ["join"], "clients": ["librdkafka"]}}))
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 2
    assert "was started from a different sweep file" in capsys.readouterr().err


CURVE_HEAD = "client,partitions_per_member,style,trigger,members,cells,settled,time_to_stable_ms_median,unserved_longest_ms_median,unserved_partition_s_median,latency_rise_p99_ms_median\n"


def test_a_compare_block_is_rewritten_from_the_two_curves_it_names(tmp_path):
    """The Java page compares itself with librdkafka's: the block names the other page's published curve and its own
    (copied by this publish), and only the points both hold are compared."""
    out = sweep_out(tmp_path)
    (out / "curve.csv").write_text(CURVE_HEAD + "java,4,eager-range,join,10,3,3,2000,1000,3.0,-5\n"
                                   + "java,4,eager-range,join,50,3,2,,,,\n")
    docs = tmp_path / "docs"
    (docs / "other").mkdir(parents=True)
    (docs / "other" / "curve.csv").write_text(CURVE_HEAD + "librdkafka,4,eager-range,join,10,3,3,1000,1000,6.0,12\n"
                                              + "librdkafka,4,eager-range,join,500,3,3,9000,9000,90,0\n")
    page = docs / "cost.md"
    page.write_text(PAGE + "<!-- compare: other/curve.csv cost/curve.csv -->\nstale\n<!-- /compare -->\n")
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 0
    block = page.read_text().split("<!-- compare: other/curve.csv cost/curve.csv -->\n")[1]
    assert "stale" not in block and block.count("| eager-range |") == 1  # 50 (Java only) and 500 (librdkafka only) left out
    assert "| eager-range | 10 | 3/3 · 3/3 | 1 | 2 | 2× | 1 | 1 | 1× | 6 | 3 | 0.5× | 0.012 | -0.005 |" in block
    assert "| to stable (s): librdkafka | java | ÷ |" in block


def test_a_compare_block_naming_a_missing_curve_is_refused_before_anything_is_written(tmp_path, capsys):
    out = sweep_out(tmp_path)
    page = tmp_path / "docs" / "cost.md"
    page.parent.mkdir()
    page.write_text(PAGE + "<!-- compare: gone/curve.csv cost/curve.csv -->\n<!-- /compare -->\n")
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 2
    assert "compare block names gone/curve.csv, which is not there" in capsys.readouterr().err
    assert not (tmp_path / "docs" / "cost").exists() and "| old | table |" in page.read_text()
