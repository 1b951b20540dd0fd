"""`kafka-chaos rates`: how often a scenario shows each anomaly under each combination of a few settings."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from harness.bad_input import ScenarioError
from harness.cli.common import EXIT_ANOMALIES, EXIT_HARNESS_FAILURE, EXIT_OK, check_folder


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "rates", help="run a scenario N times under each combination of settings; the rate of each anomaly",
        description="Run SCENARIO --repeat times under every combination of the --vary settings (one cluster a "
        "combination), analyse each run, and print and write (rates.md, rates.json in --out) a table: per "
        "combination, the runs that showed each anomaly of the runs analysed, with a 95% Wilson interval; the runs "
        "in which a fault did not act (an rpc rule that hit nothing: their silence proves nothing); invalid and "
        "failed runs. With --publish PAGE, the table (in --out, measured before) goes into PAGE's '<!-- rates: ... "
        "-->' block and its '<!-- rate: SETTING=VALUE[,...] ANOMALY -->' slots, and rates.json beside the page; "
        "nothing is run.",
        epilog="example: kafka-chaos rates scenarios/eos-endtxn-delay.yaml --vary consumer_group.client=librdkafka,"
               "java-member --vary cluster.transaction_version=1,2 --repeat 5 --anomalies eos_duplicate,eos_lost "
               "--out rates/kafka-17754\n\nexit codes: 0 no run showed an asked-for anomaly (any anomaly, without "
               "--anomalies); 1 some run did; 2 bad input; 3 a run the harness or the analysis could not finish",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", type=Path, nargs="?", help="the scenario file (not with --publish)")
    parser.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                        help="a setting of the scenario by its dotted path and the values it takes (each read as "
                             "YAML); repeat for more: every combination runs")
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="runs per combination (default: 5)")
    parser.add_argument("--anomalies", default=None, metavar="A,B", help="the anomaly types the table shows, at 0 "
                        "where no run had them (default: every type some run had); TYPE:CAUSE counts one cause of a "
                        "check's anomalies (stall:hanging_transaction, stall:delivery)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go (default: ./runs)")
    parser.add_argument("--out", type=Path, required=True, help="folder for rates.md and rates.json")
    parser.add_argument("--publish", type=Path, default=None, metavar="PAGE", help="run nothing: fill PAGE from the "
                        "table in --out")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.input_file import read_yaml
    from harness.scenario import load_scenario
    from harness.zoo import rates
    if args.publish:
        for written in rates.publish(args.out, args.publish):
            print(f"written: {written}")
        return EXIT_OK
    if args.scenario is None:
        raise ScenarioError("SCENARIO: the scenario file to run (or --publish PAGE)")
    if args.repeat < 1:
        raise ScenarioError(f"--repeat: at least 1 run per combination, got {args.repeat}")
    if not args.vary:
        raise ScenarioError("--vary: at least one setting to vary (e.g. cluster.transaction_version=1,2)")
    check_folder(args.runs_dir, "--runs-dir")
    check_folder(args.out, "--out")
    scenario = load_scenario(args.scenario)  # the file as written is valid, before any combination
    base = read_yaml(args.scenario, "scenario")
    combos = rates.combinations(rates.parse_vary(args.vary))
    cells = [(s, rates.cell_data(base, s, str(args.scenario))) for s in combos]  # all valid before any run
    asked = [a.strip() for a in args.anomalies.split(",") if a.strip()] if args.anomalies else None
    if asked:
        from analysis.api import REGISTRY
        unknown = [a for a in asked if not rates.known_column(a, REGISTRY)]
        if unknown:
            raise ScenarioError(f"--anomalies: {unknown[0]!r} is not an anomaly type ({', '.join(sorted(REGISTRY))}) "
                              f"or TYPE:CAUSE (e.g. stall:hanging_transaction)")
    measured = [rates.run_cell(data, settings, args.repeat, args.runs_dir, str(args.scenario)) for settings, data in cells]
    shown = rates.columns(measured, asked)
    about = {"date": time.strftime("%Y-%m-%d"), "machine": machine(),
             "kafka_version": scenario.cluster.kafka_version or pinned_kafka()}
    table = rates.write(args.out, scenario.name, measured, shown, about)
    print(table.read_text(), end="")
    print(f"table: {table}")
    if any(c.failures for c in measured):
        return EXIT_HARNESS_FAILURE
    return EXIT_ANOMALIES if any(c.shown[a] for c in measured for a in shown) else EXIT_OK


def machine() -> str:
    """The machine the runs shared: its cores and memory (times in the table are this machine's)."""
    try:
        kb = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
        return f"{os.cpu_count()} cores, {kb / 2 ** 20:.0f} GB"
    except (OSError, StopIteration, ValueError):
        return f"{os.cpu_count()} cores"


def pinned_kafka() -> str:
    from harness.releases.versions import pinned
    return pinned("KAFKA_VERSION")
