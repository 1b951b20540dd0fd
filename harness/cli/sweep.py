"""`kafka-chaos sweep`: a grid of cells run (resumed, rerun), measured again from their run directories, listed or published."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.common import EXIT_BAD_INPUT, EXIT_HARNESS_FAILURE, EXIT_OK, check_folder
from harness.bad_input import ScenarioError


def add_parser(commands) -> None:
    parser = commands.add_parser("sweep", help="the cost of a rebalance: a grid of group sizes, styles and triggers",
                                description="Run every cell of a sweep file (a grid of group sizes, partitions per "
                                "member, rebalance styles, triggers, clients and repeats; see scenarios/sweep/) on one "
                                "cluster, each cell an ordinary run, analysed; measure what its trigger cost: time to "
                                "stable, the longest time a partition had no live owner, partition-seconds without "
                                "one, partitions revoked and moved against those that had to move, and the rise of "
                                "end-to-end latency against the steady state before it (over every partition, and over "
                                "the partitions moved or left unserved). Only a cell that settled and whose run the "
                                "analysis found valid enters the curve; each figure shows its n. Writes into --out, after every "
                                "cell: cells.jsonl (the record), cells.csv, cells.json, curve.csv, PNG plots and "
                                "index.html. Run again with the same --out to resume where it stopped.",
                                epilog="exit codes: 0 every cell finished (a group that did not settle is a cell's "
                                       "result, `unsettled`, as a settled run the analysis found invalid is "
                                       "`invalid`); 2 bad input (the sweep file, a cell the scenario rules "
                                       "refuse, --out of another sweep or of a changed file); 3 a cell the harness "
                                       "could not finish (it runs again on resume); 130 interrupted (the cluster "
                                       "removed, the finished cells kept)",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_file", type=Path, help="the sweep file (YAML)")
    parser.add_argument("--out", type=Path, default=None, help="the sweep's folder (default: sweeps/<name>); an "
                       "existing one of the same sweep is resumed")
    parser.add_argument("--list", action="store_true", help="list the cells (and which are finished in --out), run nothing")
    parser.add_argument("--refigure", action="store_true", help="run no cell: measure again, from their run directories "
                       "and with no cluster, the finished cells in --out whose rows lack a figure the sweep now gives, "
                       "or have one by an older definition (cells measured before the analysis gained or changed it)")
    parser.add_argument("--publish", type=Path, default=None, metavar="PAGE",
                       help="run no cell: copy the curve, CSVs, plots and the sweep's record (sweep.json, cells.jsonl) "
                            "of --out beside PAGE (docs/x.md → docs/x/), replace PAGE's '<!-- curve: ... -->' ... "
                            "'<!-- /curve -->' block with the curve's tables and rewrite its compare and figure blocks")
    parser.add_argument("--rerun", default=None, metavar="PATTERN",
                       help="run again the finished cells whose id matches PATTERN (shell-style, e.g. '*-crash-*'): "
                            "their new rows replace the old; run with the same PATTERN again to resume a rerun cut "
                            "short (only the cells it has not run yet)")
    parser.add_argument("--adopt", type=Path, default=None, metavar="PUBLISHED",
                       help="start a new --out from the record a published page keeps (PUBLISHED: its folder, e.g. "
                            "docs/rebalance-cost, with sweep.json and cells.jsonl), then go on as asked: resume "
                            "(run the cells it lacks), --refigure or --publish. Its cells' run directories stayed on "
                            "the machine that ran them: their rows are kept as measured")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.sweep.runner import SweepFailed, refigure_sweep, run_sweep
    from harness.sweep.spec import load_sweep
    from harness.sweep.store import SweepDir
    spec = load_sweep(args.sweep_file)  # every cell checked before anything starts
    out = args.out or Path("sweeps") / spec.name
    check_folder(out, "--out")
    if args.adopt:
        adopted = SweepDir(out).adopt(args.adopt, spec, str(args.sweep_file))  # ScenarioError: exit 2, nothing written
        print(f"sweep: {out} starts from the {adopted} rows published in {args.adopt}")
    if args.refigure and not (out / "sweep.json").exists():
        print(f"kafka-chaos sweep: --refigure: {out} holds no sweep to measure again", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.rerun and (args.refigure or args.publish or args.list):
        raise ScenarioError("--rerun: runs cells again; it goes with none of --refigure, --publish and --list")
    if args.publish:
        return publish(spec, str(args.sweep_file), out, args.publish)
    if args.list:
        done = SweepDir(out).finished() if (out / "sweep.json").exists() else {}
        for cell in spec.cells():
            print(f"{cell.id}\t{done[cell.id]['status'] if cell.id in done else 'to run'}")
        return EXIT_OK
    try:
        rows = (refigure_sweep(spec, str(args.sweep_file), out) if args.refigure
                else run_sweep(spec, str(args.sweep_file), out, args.rerun))
    except SweepFailed as exc:
        print(f"kafka-chaos sweep: {exc}", file=sys.stderr)
        return EXIT_HARNESS_FAILURE
    failed = [r for r in rows if r["status"] == "failed"]
    counts = ", ".join(f"{sum(r['status'] == status for r in rows)} {status}" for status in ("ok", "invalid", "unsettled"))
    print(f"sweep: {out / 'index.html'} ({len(rows)} cells: {counts}, {len(failed)} failed)")
    return EXIT_HARNESS_FAILURE if failed else EXIT_OK


def publish(spec, source: str, out: Path, page: Path) -> int:
    from harness.sweep.publish import publish, took_line
    written = publish(spec, source, out, page)  # ScenarioError: exit 2 (main)
    print(f"sweep: published {out} into {page} and {written[1].parent}/ ({len(written) - 1} files); "
          f"the finished cells took {took_line(out)}")
    return EXIT_OK
