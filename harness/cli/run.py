"""`kafka-chaos run`: a scenario (or a replayed plan) on a cluster of its own or a given one, analysed."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.cli.common import EPILOG, EXIT_ANOMALIES, EXIT_BAD_INPUT, EXIT_HARNESS_FAILURE, EXIT_OK, check_folder
from harness.bad_input import ScenarioError


def add_parser(commands) -> None:
    parser = commands.add_parser("run", help="start a cluster, run a scenario with its faults, analyse it",
                              description="Start a 3-broker KRaft cluster behind Toxiproxy, run the scenario's "
                              "producer and consumer group with its fault schedule, heal, drain, analyse, and "
                              "remove the cluster. Writes runs/<run-id>/ (see docs/DESIGN.md).",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", type=Path, nargs="?", help="scenario YAML (see scenarios/default.yaml); none with --plan")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go (default: ./runs)")
    parser.add_argument("--no-analysis", action="store_true", help="skip the PySpark analysis")
    parser.add_argument("--schedule", type=Path, metavar="FILE",
                     help="replay a fault schedule instead of the scenario's faults and random_faults: a run's "
                          "schedule.json (every run writes one before it starts) or a YAML list of fault entries")
    parser.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                     help="replay a whole run from its plan.json (every run writes one before it starts; `validate "
                          "--plan` prints one) instead of a scenario: the same members, topics and fault schedule, "
                          "the client releases resolved again on this machine")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT[,...]",
                     help="run on a cluster you run instead of starting one: its client listener. Faults that need "
                          "the brokers' containers or per-client proxies are skipped, each with its reason; SASL/SSL "
                          "settings come from KAFKA_CHAOS_CLIENT_* variables (e.g. KAFKA_CHAOS_CLIENT_SASL_PASSWORD)")
    parser.add_argument("--toxiproxy-url", metavar="URL", help="with --bootstrap-servers: a Toxiproxy in front of the "
                     "brokers (each advertises its proxy), for faults on a broker's client link")
    parser.add_argument("--allow-destructive", action="store_true", help="with --bootstrap-servers: allow the faults "
                     "that touch the cluster itself (and every other client of it)")
    parser.set_defaults(handler=run)


def _what_to_run(args):
    """What `run` executes, read and checked: the scenario (its faults or a replayed --schedule), or the plan
    of --plan; nothing is resolved or started yet."""
    from harness.plan import load_plan
    from harness.scenario import load_scenario
    if (args.scenario is None) == (args.plan is None):
        raise ScenarioError("run: give a SCENARIO, or --plan PLAN_JSON (a run's plan.json), not both")
    if args.plan is not None:
        if args.schedule:
            raise ScenarioError("--schedule: a plan has its own schedule; replay it with --plan alone")
        return load_plan(args.plan)
    scenario = load_scenario(args.scenario)  # a bad scenario fails here, before anything starts
    if args.schedule:
        from harness.run import load_schedule
        scenario = scenario.with_schedule(load_schedule(args.schedule), str(args.schedule))
    return scenario


def run(args) -> int:
    from harness.plan import Plan, compile_plan, resolve_again
    from harness.progress import progress
    from harness.run import run_plan, scenario_source
    given = _what_to_run(args)
    check_folder(args.runs_dir, "--runs-dir")
    if (args.toxiproxy_url or args.allow_destructive) and not args.bootstrap_servers:
        raise ScenarioError("--toxiproxy-url and --allow-destructive go with --bootstrap-servers (an external cluster)")
    with progress("plan"):  # the client releases resolved (installed on first use) before anything starts
        planned = resolve_again(given, str(args.plan)) if isinstance(given, Plan) else compile_plan(given)
    scenario, source = planned.scenario, scenario_source(args.plan or args.scenario)
    analyse = scenario.analysis.enabled and not args.no_analysis
    from analysis.api import service
    on_drain = service.warm_up if analyse and service.enabled() else None  # Spark starts while the group drains
    if on_drain:
        from analysis.api import InputError
        try:
            service.check_settings()  # before anything starts
        except InputError as exc:
            print(f"kafka-chaos run: bad input: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if args.bootstrap_servers:
        from harness.cluster.external import ExternalCluster
        with ExternalCluster(args.bootstrap_servers, args.toxiproxy_url, args.allow_destructive, planned.lanes) as cluster:
            outcome = run_plan(planned, args.runs_dir, cluster=cluster, on_drain=on_drain, source=source)
    else:
        outcome = run_plan(planned, args.runs_dir, on_drain=on_drain, source=source)
    print(f"run directory: {outcome.run_dir}")
    status = EXIT_OK
    if analyse:
        from analysis.api import cli as analysis_cli
        from harness.progress import progress
        try:
            with progress("analysis"):
                summary = analysis_cli.analyze_run(outcome.run_dir, **scenario.analysis.options())
        except Exception as exc:  # no verdict: exit 3 (never 1, "anomalies found"); the run directory stays
            print(f"kafka-chaos: the analysis of {outcome.run_dir} failed: {analysis_cli.failure_line(exc)}; the run directory is "
                  f"kept: `kafka-chaos analyze {outcome.run_dir}` analyses it again", file=sys.stderr)
            return EXIT_HARNESS_FAILURE
        print(json.dumps({k: summary.get(k) for k in ("valid", "produced_records", "consumed_rows", "lost_records",
                                                      "duplicated_offsets", "duplicate_extra_deliveries", "rebalances")}, indent=2))
        print(f"report: {outcome.run_dir / 'report' / 'index.html'}")
        if summary.get("valid") is not True:
            status = EXIT_ANOMALIES
    for finding in outcome.unsettled:
        print(f"finding: {finding}", file=sys.stderr)
        status = EXIT_ANOMALIES
    if outcome.errors:
        for error in outcome.errors:
            print(f"harness: {error}", file=sys.stderr)
        status = EXIT_HARNESS_FAILURE
    return status
