"""Issue 40: `kafka-chaos sweep --publish PAGE` copies a sweep's curve, CSVs and plots beside the page and rewrites
only the page's curve block; a page without the block, or a sweep without a curve, is bad input (exit 2) and nothing
is written."""
import json
from pathlib import Path

import yaml

from harness.cli import main
from harness.sweep import compare
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
    (out / "cells.jsonl").write_text(json.dumps({"cell": "c1", "status": "ok", "members": 10, "seconds": 90.0,
                                                 "run_dir": str(out / "runs" / "c1-run")}) + "\n")
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
    assert copied == ["cells.csv", "cells.jsonl", "curve.csv", "curve.md", "librdkafka-4ppm-time_to_stable_ms.png",
                      "sweep.json"]
    [kept] = [json.loads(line) for line in (tmp_path / "docs" / "cost" / "cells.jsonl").read_text().splitlines()]
    assert kept["run_dir"] == "runs/c1-run"  # relative to the sweep's folder: no path of the machine that ran it
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


FIGURES = ("time_to_stable_ms", "unserved_longest_ms", "unserved_partition_s", "latency_hit_rise_p99_ms")
CURVE_HEAD = ("client,partitions_per_member,style,trigger,members,cells,valid,"
              + ",".join(f"{m}_{part}" for m in FIGURES for part in ("n", "median", "min", "max")) + "\n")


def point(client, members, valid, *figures):
    """A curve.csv line: each figure given as (n, median, min, max)."""
    return ",".join([client, "4", "eager-range", "join", str(members), "3", str(valid)]
                    + ["" if v is None else str(v) for figure in figures for v in figure]) + "\n"


def test_a_compare_block_is_rewritten_from_the_two_curves_it_names(tmp_path):
    """The Java page compares itself with librdkafka's: the block names the other page's published curve and its own
    (copied by this publish), and only the points both hold are compared; each side shows its n, and a ratio needs
    a median on both sides (3 values or more)."""
    out = sweep_out(tmp_path)
    (out / "curve.csv").write_text(CURVE_HEAD + point("java", 10, 3, (3, 2000, 1900, 2100), (3, 1000, 900, 1000),
                                                      (3, 3.0, 3.0, 3.0), (2, None, -5, 5))
                                   + point("java", 50, 2, *[(0, None, None, None)] * 4))
    docs = tmp_path / "docs"
    (docs / "other").mkdir(parents=True)
    (docs / "other" / "curve.csv").write_text(
        CURVE_HEAD + point("librdkafka", 10, 3, (3, 1000, 1000, 1000), (1, None, 1000, 1000), (3, 6.0, 5.0, 7.0),
                           (3, 12, 10, 14))
        + point("librdkafka", 500, 3, *[(3, 9000, 9000, 9000)] * 4))
    page = docs / "cost.md"
    page.write_text(PAGE + "<!-- compare: other/curve.csv cost/curve.csv -->\nstale\n<!-- /compare -->\n")
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 0
    block = page.read_text().split("<!-- compare: other/curve.csv cost/curve.csv -->\n")[1]
    assert "stale" not in block and block.count("| eager-range |") == 1  # 50 (Java only) and 500 (librdkafka only) left out
    assert ("| eager-range | 10 | 3/3 · 3/3 | 1 n=3 | 2 [1.9–2.1] n=3 | 2× | 1 n=1 | 1 [0.9–1] n=3 | – "
            "| 6 [5–7] n=3 | 3 n=3 | 0.5× | 0.012 [0.01–0.014] n=3 | -0.005, 0.005 n=2 |") in block
    assert "| to stable (s): librdkafka | java | ÷ |" in block


def test_a_sweep_starts_from_the_record_a_page_keeps_on_a_machine_without_its_folder(tmp_path, capsys):
    """--adopt: the published sweep.json and cells.jsonl become a new folder's, which then publishes and refigures
    as the original did; its rows' run directories stayed on the machine that ran them, and refigure says so."""
    out = sweep_out(tmp_path)
    page = tmp_path / "docs" / "cost.md"
    page.parent.mkdir()
    page.write_text(PAGE)
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 0
    fresh = tmp_path / "elsewhere"
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(fresh), "--adopt", str(tmp_path / "docs" / "cost"),
                 "--list"]) == 0
    listed = capsys.readouterr().out
    assert "starts from the 1 rows published in" in listed
    assert (fresh / "cells.jsonl").read_text() == (tmp_path / "docs" / "cost" / "cells.jsonl").read_text()
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(fresh), "--adopt", str(tmp_path / "docs" / "cost")]) == 2
    assert "is not empty" in capsys.readouterr().err


def test_a_compare_block_naming_a_missing_curve_is_refused_before_anything_is_written(tmp_path, capsys):
    out = sweep_out(tmp_path)
    page = tmp_path / "docs" / "cost.md"
    page.parent.mkdir()
    page.write_text(PAGE + "<!-- compare: gone/curve.csv cost/curve.csv -->\n<!-- /compare -->\n")
    assert main(["sweep", str(tmp_path / "x.yaml"), "--out", str(out), "--publish", str(page)]) == 2
    assert "compare block names gone/curve.csv, which is not there" in capsys.readouterr().err
    assert not (tmp_path / "docs" / "cost").exists() and "| old | table |" in page.read_text()


def test_two_curves_of_one_client_are_named_by_their_folders_and_compare_their_state_figures():
    """The state-rebuild page compares itself with its keep_on_revoke variant: both librdkafka, so each side is named
    by its folder; both stateful, so restores, records replayed and first processing get a ratio too."""
    def curve(replayed):
        return [{"client": "librdkafka", "partitions_per_member": 4, "style": "eager-range", "trigger": "join",
                 "members": 50, "cells": 3, "valid": 3,
                 **{f"{m}_{part}": 0 if part == "n" else None for m in (*FIGURES, *compare.STATE_HEADS)
                    for part in ("n", "median", "min", "max")},
                 "records_replayed_n": 3 if replayed else 0, "records_replayed_median": replayed,
                 "records_replayed_min": replayed, "records_replayed_max": replayed}]
    block = compare.compare(curve(10_000), curve(1_000_000), ("state-rebuild-keep", "state-rebuild"))
    assert "| records replayed: state-rebuild-keep | state-rebuild | ÷ |" in block
    assert "| 10,000 n=3 | 1,000,000 n=3 | 100× |" in block
    assert "restores: state-rebuild-keep" in block and "librdkafka" not in block
    assert "records replayed" not in compare.compare(curve(None), curve(1), ("a", "b"))  # one side keeps no state


def test_a_style_ratios_block_divides_one_styles_medians_by_each_others_in_its_group():
    """The state-rebuild page's "by how much": eager range's median over each other style's, same trigger and size;
    a figure with no median on either side (fewer than 3 values) is "–", and a style with no eager point is left out."""
    def pt(style, members, replayed, restores_n=3):
        figures = {f"{m}_{part}": None for m in (*FIGURES, *compare.STATE_HEADS) for part in ("median", "min", "max")}
        return {**figures, **{f"{m}_n": 0 for m in (*FIGURES, *compare.STATE_HEADS)}, "client": "librdkafka",
                "partitions_per_member": 4, "trigger": "join", "style": style, "members": members,
                "records_replayed_n": 3, "records_replayed_median": replayed,
                "restores_n": restores_n, "restores_median": 40 if restores_n >= 3 else None}
    curve = [pt("eager-range", 10, 200_000), pt("cooperative-sticky", 10, 15_000),
             pt("consumer-uniform", 10, 20_000, restores_n=2), pt("cooperative-sticky", 50, 1)]
    from harness.sweep import style_ratios
    table = style_ratios.table(curve, "eager-range")
    assert "| restores ÷ | records replayed ÷ | assigned to first processed (s) ÷ |" in table
    assert "| librdkafka | 4 | join | 10 | cooperative-sticky | 1× | 13× | – |" in table
    assert "| librdkafka | 4 | join | 10 | consumer-uniform | – | 10× | – |" in table
    assert "| 50 |" not in table  # no eager point at 50 members
    page = "a\n<!-- style-ratios: eager-range -->\nstale\n<!-- /style-ratios -->\nb"
    assert style_ratios.fill(page, curve) == f"a\n<!-- style-ratios: eager-range -->\n{table}\n<!-- /style-ratios -->\nb"


def test_a_row_measured_by_an_older_definition_of_a_figure_is_stale():
    """--refigure measures again a row that lacks a figure or has one by an older definition (Figure.revision): the
    first_processing_ms of rows measured before it stopped at a partition's loss (revision 2)."""
    from analysis.api import stale
    row = {"restore_ms": 1, "first_processing_ms": 81_962}
    assert stale(row, ("restore_ms", "first_processing_ms", "restores")) == ["first_processing_ms", "restores"]
    assert stale({**row, "figure_revisions": {"first_processing_ms": 2}}, ("restore_ms", "first_processing_ms")) == []


def test_a_cell_the_analysis_could_not_judge_is_analysed_again_by_refigure():
    """A check that failed on a cell's run leaves its verdict "unknown" (an invalid cell, but not a finding): once the
    check is fixed, --refigure analyses the cell again; a judged cell, valid or not, is left alone."""
    from harness.sweep.runner import unjudged
    assert unjudged({"valid": "unknown", "status": "invalid"})
    assert not unjudged({"valid": False, "status": "invalid"}) and not unjudged({"valid": True, "status": "ok"})


def test_every_published_sweep_still_has_the_fingerprint_it_was_recorded_with():
    """A setting added to the schema since (unset) must not stop a published sweep from resuming or being adopted:
    each docs/<page>/sweep.json's fingerprint is its file's fingerprint today."""
    root = Path(__file__).resolve().parents[2]
    records = sorted(root.glob("docs/*/sweep.json"))
    assert records
    for record in records:
        meta = json.loads(record.read_text())
        assert load_sweep(root / meta["source"]).fingerprint() == meta["fingerprint"], record
