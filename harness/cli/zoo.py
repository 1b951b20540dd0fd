"""`kafka-chaos zoo`: the known bugs on the releases that had them and fixed them, or tables merged and judged again."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.cli.common import CATALOG, EXIT_ANOMALIES, EXIT_HARNESS_FAILURE, EXIT_OK, check_folder
from harness.bad_input import ScenarioError


def add_parser(commands) -> None:
    parser = commands.add_parser("zoo", help="reproduce known consumer-group bugs on the releases that had them",
                              description="Run each bug of the zoo (scenarios/zoo/) on the release that had it and "
                              "on the release that fixed it (the client's or the brokers', as the file's zoo.swap "
                              "says; for a bug still open, the affected one alone or beside its contrast, another client kind "
                              "without the bug), --repeat times each. A run "
                              "reproduces a bug only when it shows the bug's own signature (the file's "
                              "zoo.signature, over every anomaly row and event of the run). Prints and writes "
                              "(zoo.md, zoo.json) a table: per release the runs with the signature of the runs "
                              "started, with a 95% Wilson interval; the other anomalies; failed runs; the measured "
                              "status; the status and rate the file records; and the nightly's verdict.",
                              epilog="exit codes: 0 every bug as its file records (green); 1 a bug moved: "
                                     "significantly below its recorded rate, shown on a fixed release or the contrast, or shown "
                                     "though recorded as not reproduced (the table says which); 2 bad input; "
                                     "3 a run the harness or the analysis could not finish",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bugs", nargs="*", metavar="BUG", help="KAFKA-14024, librdkafka#4059, or a file name of "
                     "scenarios/zoo/ without .yaml (default: every bug)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N", help="runs per release (default: 3)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go (default: ./runs)")
    parser.add_argument("--out", type=Path, default=None, help="folder for zoo.md and zoo.json (default: the runs dir)")
    parser.add_argument("--list", action="store_true", help="list the zoo's bugs and releases, run nothing")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="ZOO_JSON", help="run nothing: merge zoo.json tables "
                     "measured in parts (different bugs or days) into one table with their dates, written to --out "
                     "(default: printed only)")
    parser.add_argument("--rejudge", action="store_true", help="with --merge: judge the recorded runs again by the "
                     "signatures of the zoo files in --dir now (after a signature changed; no run is made again, "
                     "every run directory must still exist)")
    parser.add_argument("--dir", type=Path, default=CATALOG / "zoo", help="the zoo folder (default: the project's scenarios/zoo/)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.scenario import parse_scenario
    from harness.zoo import runner as zoo
    if args.repeat < 1:
        raise ScenarioError(f"--repeat: at least 1 run per release, got {args.repeat}")
    if args.merge:
        return merge(args)
    chosen = zoo.select(args.bugs, args.dir)  # an unknown bug fails here, before anything starts
    if args.list:
        print(zoo.listing(chosen))
        return EXIT_OK
    check_folder(args.runs_dir, "--runs-dir")
    check_folder(args.out, "--out")
    for path, s in chosen:  # every release's scenario is valid before anything starts
        for side, version in s.zoo.releases:
            parse_scenario(zoo.on_side(s, side), f"{path} on {version}")
    results = [zoo.run_bug(path, s, args.repeat, args.runs_dir) for path, s in chosen]
    table = zoo.write(args.out or args.runs_dir, results, time.strftime("%Y-%m-%d"))
    print(table.read_text(), end="")
    print(f"table: {table}")
    reasons = [reason for r in results for reason in r.gate()]
    for reason in reasons:
        print(f"zoo: RED: {reason}", file=sys.stderr)
    if any(t.failed for r in results for t in r.tallies.values()):
        return EXIT_HARNESS_FAILURE
    return EXIT_ANOMALIES if reasons else EXIT_OK


def merge(args) -> int:
    from harness.zoo import runner as zoo
    check_folder(args.out, "--out")
    tables = []
    for path in args.merge:  # each table read and checked alone, so an error names its file
        try:
            tables.append(json.loads(path.read_text(encoding="utf-8")))
            zoo.merge(tables[-1:])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"{path}: not a zoo.json table ({zoo.one_line(exc)})") from None
    results = zoo.merge(tables)
    if args.rejudge:
        specs = {s.zoo.bug: s.zoo for _, s in zoo.select([], args.dir)}
        missing = [r.spec.bug for r in results if r.spec.bug not in specs]
        if missing:
            raise ScenarioError(f"--rejudge: {missing[0]} has no file in {args.dir}")
        try:
            results = [zoo.rejudge(r, specs[r.spec.bug]) for r in results]
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"--rejudge: {zoo.one_line(exc)}") from None
    date = time.strftime("%Y-%m-%d")
    if args.out:
        print(f"table: {zoo.write(args.out, results, date)}")
    print(zoo.markdown(results, date), end="")
    return EXIT_OK
