"""kafka-chaos: run chaos scenarios against a real Kafka consumer group and report what happened."""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

CATALOG = Path(__file__).resolve().parents[1] / "scenarios"
EXIT_OK, EXIT_ANOMALIES, EXIT_BAD_INPUT, EXIT_HARNESS_FAILURE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EPILOG = """exit codes (for CI):
  0  the run completed and the analysis found no anomaly
  1  the run completed and the analysis found anomalies (see report/summary.json); a group that did not
     become stable within run.stable_timeout_s or did not catch up within run.drain_timeout_s is one
     (the `unsettled` anomaly; with --no-analysis, 1 as well)
  2  bad input: an invalid scenario, flag or run directory; nothing was started
  3  the harness failed: the cluster did not start, the group could not be observed, the producer failed, the
     workload did not end, a fault did not inject or heal, the analysis failed
130  interrupted (SIGINT/SIGTERM); every fault was healed and every container removed first
"""


class Interrupted(BaseException):
    """SIGTERM turned into an exception, so every `finally` (heals, teardown) runs."""


def _raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-chaos", description=__doc__, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="start a cluster, run a scenario with its faults, analyse it",
                              description="Start a 3-broker KRaft cluster behind Toxiproxy, run the scenario's "
                              "producer and consumer group with its fault schedule, heal, drain, analyse, and "
                              "remove the cluster. Writes runs/<run-id>/ (see docs/DESIGN.md).",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("scenario", type=Path, nargs="?", help="scenario YAML (see scenarios/default.yaml); none with --plan")
    run.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go (default: ./runs)")
    run.add_argument("--no-analysis", action="store_true", help="skip the PySpark analysis")
    run.add_argument("--schedule", type=Path, metavar="FILE",
                     help="replay a fault schedule instead of the scenario's faults and random_faults: a run's "
                          "schedule.json (every run writes one before it starts) or a YAML list of fault entries")
    run.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                     help="replay a whole run from its plan.json (every run writes one before it starts; `validate "
                          "--plan` prints one) instead of a scenario: the same members, topics and fault schedule, "
                          "the client releases resolved again on this machine")
    run.add_argument("--bootstrap-servers", metavar="HOST:PORT[,...]",
                     help="run on a cluster you run instead of starting one: its client listener. Faults that need "
                          "the brokers' containers or per-client proxies are skipped, each with its reason; SASL/SSL "
                          "settings come from KAFKA_CHAOS_CLIENT_* variables (e.g. KAFKA_CHAOS_CLIENT_SASL_PASSWORD)")
    run.add_argument("--toxiproxy-url", metavar="URL", help="with --bootstrap-servers: a Toxiproxy in front of the "
                     "brokers (each advertises its proxy), for faults on a broker's client link")
    run.add_argument("--allow-destructive", action="store_true", help="with --bootstrap-servers: allow the faults "
                     "that touch the cluster itself (and every other client of it)")
    run.set_defaults(handler=cmd_run)

    validate = commands.add_parser("validate", help="check a scenario file and print it with every default filled in",
                                   description="Check a scenario and print it with every default filled in; with "
                                   "--schedule, print the fault schedule the run would follow (random_faults drawn from its seed); "
                                   "with --plan, the run's whole plan (plan.json; no cluster is needed).")
    validate.add_argument("scenario", type=Path)
    shown = validate.add_mutually_exclusive_group()
    shown.add_argument("--schedule", action="store_true", help="print the fault schedule instead (YAML)")
    shown.add_argument("--plan", action="store_true", help="print the run's plan instead (JSON, as plan.json): the "
                       "client releases (offline: one not on this machine yet stays `pending`), every member, the "
                       "topics and the expanded fault schedule")
    validate.set_defaults(handler=cmd_validate)

    scenarios = commands.add_parser("scenarios", help="list the scenario catalog, one line each",
                                    description="List the scenario files of a folder (default: the project's "
                                    "scenarios/): the file, and the one line of what it shows. Each file's opening "
                                    "comment names the KIP or document it checks and what to expect.")
    scenarios.add_argument("--dir", type=Path, default=CATALOG, help=f"the folder (default: {CATALOG})")
    scenarios.set_defaults(handler=cmd_scenarios)

    zoo = commands.add_parser("zoo", help="reproduce known consumer-group bugs on the releases that had them",
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
    zoo.add_argument("bugs", nargs="*", metavar="BUG", help="KAFKA-14024, librdkafka#4059, or a file name of "
                     "scenarios/zoo/ without .yaml (default: every bug)")
    zoo.add_argument("--repeat", type=int, default=3, metavar="N", help="runs per release (default: 3)")
    zoo.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go (default: ./runs)")
    zoo.add_argument("--out", type=Path, default=None, help="folder for zoo.md and zoo.json (default: the runs dir)")
    zoo.add_argument("--list", action="store_true", help="list the zoo's bugs and releases, run nothing")
    zoo.add_argument("--merge", type=Path, nargs="+", metavar="ZOO_JSON", help="run nothing: merge zoo.json tables "
                     "measured in parts (different bugs or days) into one table with their dates, written to --out "
                     "(default: printed only)")
    zoo.add_argument("--rejudge", action="store_true", help="with --merge: judge the recorded runs again by the "
                     "signatures of the zoo files in --dir now (after a signature changed; no run is made again, "
                     "every run directory must still exist)")
    zoo.add_argument("--dir", type=Path, default=CATALOG / "zoo", help="the zoo folder (default: the project's scenarios/zoo/)")
    zoo.set_defaults(handler=cmd_zoo)

    gate = commands.add_parser("gate", help="the nightly job's verdict from what one night wrote",
                               description="Read a night's folder (junit.xml of the slow families, zoo.json, "
                               "exit-codes) and the trend page's trend.json; write summary.md, the job summary: "
                               "which catalog expectations failed, which zoo bugs moved and why, which harness steps "
                               "failed, which trend points fell outside their series.",
                               epilog="exit codes: 0 green (nothing changed); 1 red (the summary says what changed); "
                                      "2 bad input", formatter_class=argparse.RawDescriptionHelpFormatter)
    gate.add_argument("night", type=Path, help="the night's folder (make nightly: nightly/<date>)")
    gate.add_argument("--trend", type=Path, default=None, help="the trend page's trend.json (default: none)")
    gate.set_defaults(handler=cmd_gate)

    sweep = commands.add_parser("sweep", help="the cost of a rebalance: a grid of group sizes, styles and triggers",
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
    sweep.add_argument("sweep_file", type=Path, help="the sweep file (YAML)")
    sweep.add_argument("--out", type=Path, default=None, help="the sweep's folder (default: sweeps/<name>); an "
                       "existing one of the same sweep is resumed")
    sweep.add_argument("--list", action="store_true", help="list the cells (and which are finished in --out), run nothing")
    sweep.add_argument("--refigure", action="store_true", help="run no cell: measure again, from their run directories "
                       "and with no cluster, the finished cells in --out whose rows lack a figure the sweep now gives "
                       "(cells measured before the analysis gained it)")
    sweep.add_argument("--publish", type=Path, default=None, metavar="PAGE",
                       help="run no cell: copy the curve, CSVs, plots and the sweep's record (sweep.json, cells.jsonl) "
                            "of --out beside PAGE (docs/x.md → docs/x/), replace PAGE's '<!-- curve: ... -->' ... "
                            "'<!-- /curve -->' block with the curve's tables and rewrite its compare and figure blocks")
    sweep.add_argument("--rerun", default=None, metavar="PATTERN",
                       help="run again the finished cells whose id matches PATTERN (shell-style, e.g. '*-crash-*'): "
                            "their new rows replace the old; run with the same PATTERN again to resume a rerun cut "
                            "short (only the cells it has not run yet)")
    sweep.add_argument("--adopt", type=Path, default=None, metavar="PUBLISHED",
                       help="start a new --out from the record a published page keeps (PUBLISHED: its folder, e.g. "
                            "docs/rebalance-cost, with sweep.json and cells.jsonl), then go on as asked: resume "
                            "(run the cells it lacks), --refigure or --publish. Its cells' run directories stayed on "
                            "the machine that ran them: their rows are kept as measured")
    sweep.set_defaults(handler=cmd_sweep)

    clean = commands.add_parser("clean", help="remove containers and networks left by crashed runs; stop the analysis service",
                                description="Removes what a harness on this host left when it ended without cleaning up: "
                                            "containers, networks and log disks whose owner (host, boot, PID namespace, PID "
                                            "and start time) is provably gone. Another host's or PID namespace's are never "
                                            "touched, nor a live run's, except with --all.")
    clean.add_argument("--all", action="store_true", help="every container a harness started on this Docker engine, of "
                       "runs still going and of other hosts' too; each one removed is named with its owner")
    clean.set_defaults(handler=cmd_clean)

    from analysis import cli as analysis_cli
    analysis_cli.add_parser(commands)
    _add_spark_cluster(commands)
    return parser


def _add_spark_cluster(commands) -> None:
    """`spark-cluster up|down|status`, and `analyze --spark-cluster N` (harness/cluster/spark.py)."""
    sc = commands.add_parser("spark-cluster", help="a Spark standalone cluster in containers for `analyze --master`",
                             description="Start (up), list (status) or remove (down) a Spark standalone cluster of a "
                             "master and N workers in containers (image kafka-chaos/spark, built on first use). `up` "
                             "prints the `kafka-chaos analyze` line that uses it; the folders given with --mount are "
                             "what its executors can read.", epilog="exit codes: 0 done, 2 bad input, 3 it failed")
    sc.add_argument("action", choices=("up", "down", "status"))
    sc.add_argument("--workers", type=int, default=2, help="workers (default: 2)")
    sc.add_argument("--cores", type=int, default=None, help="cores of each worker (default: all of this machine's)")
    sc.add_argument("--memory-mb", type=int, default=2560, help="executor memory of each worker (default: 2560)")
    sc.add_argument("--mount", type=Path, action="append", default=None, metavar="DIR",
                    help="a folder the executors read, at its own path (repeatable; default: ./runs)")
    sc.set_defaults(handler=cmd_spark_cluster)
    analyze = commands.choices["analyze"]
    analyze.add_argument("--spark-cluster", type=int, default=None, metavar="WORKERS",
                         help="start a Spark standalone cluster of WORKERS workers in containers for this analysis "
                              "and remove it afterwards (harness/cluster/spark.py)")
    analyze.set_defaults(handler=cmd_analyze_on_spark_cluster, func=cmd_analyze_on_spark_cluster)


def cmd_spark_cluster(args) -> int:
    from harness.cluster import spark
    if args.action == "down":
        print(f"removed {spark.remove_clusters()} Spark cluster container(s)")
        return EXIT_OK
    if args.action == "status":
        up = spark.clusters_up()
        print("\n".join(f"{cid}: {url}" for cid, url in up.items()) or "no Spark cluster is up")
        return EXIT_OK
    mounts = args.mount or [Path("runs")]
    missing = [m for m in mounts if not m.is_dir()]
    problem = (f"--mount {missing[0]}: no such folder" if missing
               else f"--workers {args.workers}: at least 1" if args.workers < 1
               else f"one is up already ({', '.join(up.values())}): `kafka-chaos spark-cluster down` first"
               if (up := spark.clusters_up()) else None)
    if problem:
        print(f"kafka-chaos spark-cluster: bad input: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cluster = spark.SparkCluster(workers=args.workers, cores=args.cores, memory_mb=args.memory_mb,
                                 mounts=tuple(mounts), owned=False)
    try:
        cluster.start()
    except BaseException:  # left running only once it is up
        cluster.stop()
        raise
    print(f"master: {cluster.master_url} (web UI {cluster.master_ui_url}); executors read "
          f"{', '.join(map(str, cluster.mounts))}\n{cluster.analyze_command()}")
    return EXIT_OK


def cmd_analyze_on_spark_cluster(args) -> int:
    from analysis import cli as analysis_cli
    if args.spark_cluster is None:
        return analysis_cli.cmd_analyze(args)
    problem = ("--spark-cluster starts its own master: not with --master or --remote" if args.master or args.remote
               else f"{args.run_dir}: run directory does not exist" if not args.run_dir.is_dir()
               else f"--spark-cluster {args.spark_cluster}: at least 1 worker" if args.spark_cluster < 1 else None)
    if problem:
        print(f"kafka-chaos analyze: bad input: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from harness.cluster.spark import SparkCluster
    with SparkCluster(workers=args.spark_cluster, mounts=(args.run_dir,)) as cluster:
        args.master = cluster.master_url
        args.conf = [*cluster.driver_conf().items(), *(args.conf or [])]
        return analysis_cli.cmd_analyze(args)


def cmd_validate(args) -> int:
    from harness.scenario import load_scenario
    scenario = load_scenario(args.scenario)
    for warning in scenario.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    if args.schedule:
        import yaml
        print(yaml.safe_dump([f.model_dump(mode="json") for f in scenario.schedule()], sort_keys=False), end="")
    elif args.plan:
        from harness.plan import compile_plan
        print(json.dumps(compile_plan(scenario, offline=True).to_json(), indent=2))
    else:
        print(scenario.to_yaml(), end="")
    return EXIT_OK


def cmd_scenarios(args) -> int:
    from harness.scenario import ScenarioError, catalog
    if not args.dir.is_dir():
        raise ScenarioError(f"--dir: {args.dir} is not a folder")
    entries = catalog(args.dir)
    if not entries:
        raise ScenarioError(f"--dir: {args.dir} has no scenario file (*.yaml)")
    width = max((len(path.name) for path, _ in entries), default=0)
    for path, scenario in entries:
        print(f"{path.name:<{width}}  {scenario.description or '(no description)'}")
    return EXIT_OK


def cmd_zoo(args) -> int:
    import time

    from harness.scenario import ScenarioError, parse_scenario
    from harness.zoo import runner as zoo
    if args.repeat < 1:
        raise ScenarioError(f"--repeat: at least 1 run per release, got {args.repeat}")
    if args.merge:
        return _zoo_merge(args)
    chosen = zoo.select(args.bugs, args.dir)  # an unknown bug fails here, before anything starts
    if args.list:
        print(zoo.listing(chosen))
        return EXIT_OK
    _check_folder(args.runs_dir, "--runs-dir")
    _check_folder(args.out, "--out")
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


def _zoo_merge(args) -> int:
    import time

    from harness.scenario import ScenarioError
    from harness.zoo import runner as zoo
    _check_folder(args.out, "--out")
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


def cmd_sweep(args) -> int:
    from harness.scenario import ScenarioError
    from harness.sweep.runner import SweepFailed, refigure_sweep, run_sweep
    from harness.sweep.spec import load_sweep
    from harness.sweep.store import SweepDir
    spec = load_sweep(args.sweep_file)  # every cell checked before anything starts
    out = args.out or Path("sweeps") / spec.name
    _check_folder(out, "--out")
    if args.adopt:
        adopted = SweepDir(out).adopt(args.adopt, spec, str(args.sweep_file))  # ScenarioError: exit 2, nothing written
        print(f"sweep: {out} starts from the {adopted} rows published in {args.adopt}")
    if args.refigure and not (out / "sweep.json").exists():
        print(f"kafka-chaos sweep: --refigure: {out} holds no sweep to measure again", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.rerun and (args.refigure or args.publish or args.list):
        raise ScenarioError("--rerun: runs cells again; it goes with none of --refigure, --publish and --list")
    if args.publish:
        return _publish_sweep(spec, str(args.sweep_file), out, args.publish)
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


def _publish_sweep(spec, source: str, out: Path, page: Path) -> int:
    from harness.sweep.publish import publish, took_line
    written = publish(spec, source, out, page)  # ScenarioError: exit 2 (main)
    print(f"sweep: published {out} into {page} and {written[1].parent}/ ({len(written) - 1} files); "
          f"the finished cells took {took_line(out)}")
    return EXIT_OK


def cmd_gate(args) -> int:
    from harness.nightly import gate
    from harness.scenario import ScenarioError
    if not args.night.is_dir():
        raise ScenarioError(f"night: {args.night} is not a folder")
    verdict = gate.judge(args.night, args.trend)
    text = verdict.markdown(args.night)
    (args.night / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return EXIT_ANOMALIES if verdict.red else EXIT_OK


def cmd_clean(args) -> int:
    from harness.cluster.containers import NoDockerEngine, sweep_stale_containers
    from workloads.services import sweep_stale_workloads
    from analysis import service
    try:
        containers = f"removed {sweep_stale_containers(include_live=args.all, say=print if args.all else None)} container(s)"
    except NoDockerEngine as exc:  # nothing of ours can be running (as `make clean` says)
        containers = f"{exc}: no container to remove"
    print(f"{containers}, thawed {sweep_stale_workloads()} frozen workload process(es) of dead runs"
          f"{', stopped the analysis service' if service.stop() else ''}")
    return EXIT_OK


def _check_folder(path: Path | None, flag: str) -> None:
    """A folder the command writes into is one, or can be made: no part of its path is a file."""
    from harness.scenario import ScenarioError
    if path is None:
        return
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                raise ScenarioError(f"{flag}: {part} is a file, not a folder")
            return


def _what_to_run(args):
    """What `run` executes, read and checked: the scenario (its faults or a replayed --schedule), or the plan
    of --plan; nothing is resolved or started yet."""
    from harness.plan import load_plan
    from harness.scenario import ScenarioError, load_scenario
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


def cmd_run(args) -> int:
    from harness.plan import Plan, compile_plan, resolve_again
    from harness.progress import progress
    from harness.run import run_plan, scenario_source
    from harness.scenario import ScenarioError
    given = _what_to_run(args)
    _check_folder(args.runs_dir, "--runs-dir")
    if (args.toxiproxy_url or args.allow_destructive) and not args.bootstrap_servers:
        raise ScenarioError("--toxiproxy-url and --allow-destructive go with --bootstrap-servers (an external cluster)")
    with progress("plan"):  # the client releases resolved (installed on first use) before anything starts
        planned = resolve_again(given, str(args.plan)) if isinstance(given, Plan) else compile_plan(given)
    scenario, source = planned.scenario, scenario_source(args.plan or args.scenario)
    analyse = scenario.analysis.enabled and not args.no_analysis
    from analysis import service
    on_drain = service.warm_up if analyse and service.enabled() else None  # Spark starts while the group drains
    if on_drain:
        from analysis import InputError
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
        from analysis.cli import analyze_run, failure_line
        from harness.progress import progress
        try:
            with progress("analysis"):
                summary = analyze_run(outcome.run_dir, **scenario.analysis.options())
        except Exception as exc:  # no verdict: exit 3 (never 1, "anomalies found"); the run directory stays
            print(f"kafka-chaos: the analysis of {outcome.run_dir} failed: {failure_line(exc)}; the run directory is "
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        return args.handler(args)
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"kafka-chaos: interrupted ({exc or 'SIGINT'}); faults healed, containers removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the harness's own errors, imported only now: `analyze` never loads the cluster code
        from harness.cluster.kafka import ClusterError
        from harness.cluster.external import ExternalClusterError
        from harness.scenario import ScenarioError
        if isinstance(exc, ScenarioError):
            print(f"kafka-chaos: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(exc, (ClusterError, ExternalClusterError)):
            print(f"kafka-chaos: the cluster failed: {exc}", file=sys.stderr)
            return EXIT_HARNESS_FAILURE
        from harness.cluster.containers import engine_unreachable
        from harness.progress import one_line
        if engine_unreachable(exc):
            print(f"kafka-chaos: the Docker engine stopped answering ({one_line(exc)}); once it answers again, "
                  "`kafka-chaos clean` removes what is left", file=sys.stderr)
            return EXIT_HARNESS_FAILURE
        import traceback  # a bug of ours: its traceback, and never exit 1 ("anomalies found"), Python's own code
        traceback.print_exc()
        print(f"kafka-chaos: internal error ({one_line(exc)}); please report it with the traceback above",
              file=sys.stderr)
        return EXIT_HARNESS_FAILURE


if __name__ == "__main__":
    sys.exit(main())
