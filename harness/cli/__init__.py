"""kafka-chaos: run chaos scenarios against a real Kafka consumer group and report what happened.

One module a command (run, validate, scenarios, zoo, gate, sweep, clean, spark-cluster), each with its parser
section (`add_parser`) and its function (`run`); `analyze` and the analysis's other commands are analysis/cli.py's.
A command imports what it runs only when it runs, so `--help` and `analyze` load no cluster code.
"""
from __future__ import annotations

import argparse
import signal
import sys

from harness.cli import clean, gate, rates, run, scenarios, spark_cluster, sweep, validate, zoo
from harness.cli.common import (CATALOG, EPILOG, EXIT_ANOMALIES, EXIT_BAD_INPUT, EXIT_HARNESS_FAILURE, EXIT_INTERRUPTED,
                                EXIT_OK)
from harness.bad_input import ScenarioError

__all__ = ["CATALOG", "EXIT_ANOMALIES", "EXIT_BAD_INPUT", "EXIT_HARNESS_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK",
           "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from analysis.api import cli as analysis_cli
    parser = argparse.ArgumentParser(prog="kafka-chaos", description=__doc__.split("\n")[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (run, validate, scenarios, zoo, rates, gate, sweep, clean):
        command.add_parser(commands)
    analysis_cli.add_parser(commands)
    spark_cluster.add_parser(commands)  # it adds --spark-cluster to `analyze`
    return parser


class Interrupted(BaseException):
    """SIGTERM turned into an exception, so every `finally` (heals, teardown) runs."""


def _raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


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

