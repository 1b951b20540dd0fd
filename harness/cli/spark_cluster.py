"""`kafka-chaos spark-cluster up|down|status`, and `analyze --spark-cluster N` (harness/cluster/spark.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.common import EXIT_BAD_INPUT, EXIT_OK


def add_parser(commands) -> None:
    parser = commands.add_parser("spark-cluster", help="a Spark standalone cluster in containers for `analyze --master`",
                             description="Start (up), list (status) or remove (down) a Spark standalone cluster of a "
                             "master and N workers in containers (image kafka-chaos/spark, built on first use). `up` "
                             "prints the `kafka-chaos analyze` line that uses it; the folders given with --mount are "
                             "what its executors can read.", epilog="exit codes: 0 done, 2 bad input, 3 it failed")
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--workers", type=int, default=2, help="workers (default: 2)")
    parser.add_argument("--cores", type=int, default=None, help="cores of each worker (default: all of this machine's)")
    parser.add_argument("--memory-mb", type=int, default=2560, help="executor memory of each worker (default: 2560)")
    parser.add_argument("--mount", type=Path, action="append", default=None, metavar="DIR",
                    help="a folder the executors read, at its own path (repeatable; default: ./runs)")
    parser.set_defaults(handler=run)
    analyzer = commands.choices["analyze"]
    analyzer.add_argument("--spark-cluster", type=int, default=None, metavar="WORKERS",
                         help="start a Spark standalone cluster of WORKERS workers in containers for this analysis "
                              "and remove it afterwards (harness/cluster/spark.py)")
    analyzer.set_defaults(handler=analyze, func=analyze)


def run(args) -> int:
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


def analyze(args) -> int:
    from analysis.api import cli as analysis_cli
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
