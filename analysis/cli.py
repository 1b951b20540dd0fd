"""`kafka-chaos analyze RUN_DIR` and `kafka-chaos compare RUN...` (registered on the kafka-chaos CLI by
add_parser), and the standalone `python -m analysis`."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from analysis.errors import InputError
from analysis.engine.spark import SparkUnavailable

EXIT_VALID, EXIT_INVALID, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3

ANALYZE_EPILOG = """exit codes:
  0  valid: no anomaly that breaks the delivery guarantees (duplicates inside the commit budget are allowed)
  1  invalid: anomalies found ({invalid})
  2  bad input: the run directory does not follow contract v1; the message names the file and the column
  3  unknown: a check crashed or could not decide (see report/index.html); no stack trace instead of a report

input: RUN_DIR/produced/ and RUN_DIR/consumed/ (*.parquet and/or *.jsonl) are required; RUN_DIR/events/*.jsonl
and RUN_DIR/faults.jsonl are optional (the checks that need them are skipped and the report says why).
output: RUN_DIR/report/summary.json and RUN_DIR/report/index.html (self-contained, opens offline).

checks (count unit; needs):
{checks}
"""


def analyze_epilog() -> str:
    """The epilog of `analyze --help`, from the checks registered when it is shown (loading them only then)."""
    from analysis.checks import REGISTRY
    return ANALYZE_EPILOG.format(invalid=", ".join(n for n, c in REGISTRY.items() if c.invalidates), checks="\n".join(
        f"  {n:22} {c.unit}{'; needs ' + ', '.join(c.needs) if c.needs else ''}" for n, c in REGISTRY.items()))


class EpilogWhenShown(argparse.RawDescriptionHelpFormatter):
    """A formatter that calls a callable description or epilog when the help is shown, not when the parser is built."""

    def add_text(self, text):
        super().add_text(text() if callable(text) else text)


COMPARE_EPILOG = """Each RUN is a run directory. Runs without report/summary.json are analysed first (Spark).
Writes compare.json and compare.md into --out (default: the current directory) and prints the table.
exit codes: 0 all runs valid, 1 at least one invalid, 2 bad input, 3 at least one unknown.
"""


def add_parser(subparsers) -> None:
    """Register `analyze`, `compare`, `trend` and `compact` on an argparse subparsers object (handler in `handler` and `func`)."""
    p = subparsers.add_parser(
        "analyze", help="check a run directory with PySpark; write report/summary.json and report/index.html",
        description="Check a run directory (run-directory contract v1) for lost records, duplicates and whether "
                    "the commit protocol explains them, skips and steps back inside one member's ownership, commit "
                    "regressions and unhealed faults; attribute each anomaly to the faults active at the time.",
        epilog=analyze_epilog, formatter_class=EpilogWhenShown)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run directory (runs/<run-id>/)")
    _spark_args(p)
    p.add_argument("--conf", action="append", type=_spark_property, default=None, metavar="KEY=VALUE",
                   help="a Spark property for the --master session, as spark-submit's --conf (repeatable), e.g. "
                        "spark.executor.memory=4g, spark.pyspark.python=/usr/bin/python3 (the executors' Python), "
                        "spark.driver.host=ADDRESS (where executors reach this process)")
    p.add_argument("--grace-ms", type=int, default=30_000, metavar="MS",
                   help="an anomaly belongs to a fault if it happens before heal + MS (default: 30000)")
    p.add_argument("--stall-ms", type=int, default=None, metavar="MS",
                   help="a partition with records waiting and a live owner, outside any rebalance, that delivers "
                        "nothing for longer than MS stalls (default: five heartbeat intervals of the slowest member, "
                        "at least 5000; the scenario's analysis.stall_ms when the harness analyses its own run)")
    p.add_argument("--expected-fatal", action="append", type=_member_names, default=None, metavar="MEMBER[,MEMBER]",
                   help="members expected to end on a fatal client error (e.g. fenced on purpose), or `any`: listed in "
                        "member_fatal's info, not reported (default: none; the scenario's analysis.expected_fatal when "
                        "the harness analyses its own run; a fault that expects one says so in faults.jsonl)")
    p.add_argument("--protocol", choices=("auto", "eager", "cooperative"), default="auto",
                   help="how `assigned` events are read when rebuilding ownership (default: auto, from each "
                        "member's `started` event)")
    p.add_argument("--max-examples", type=int, default=20, metavar="N", help="anomaly ranges listed per type (counts stay exact)")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the text summary")
    p.set_defaults(handler=cmd_analyze, func=cmd_analyze)

    c = subparsers.add_parser("compare", help="a table of figures across runs (e.g. the assignor matrix)",
                              description="Compare runs: configuration, verdict, rebalances, time without owner, "
                                          "duplicates, losses and other anomalies, one row per run.",
                              epilog=COMPARE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("runs", type=Path, nargs="+", metavar="RUN")
    c.add_argument("--out", type=Path, default=Path("."), help="folder for compare.json and compare.md (default: .)")
    c.add_argument("--reanalyze", action="store_true", help="analyse every run again, even with a summary")
    _spark_args(c)
    c.add_argument("--grace-ms", type=int, default=30_000, metavar="MS")
    c.set_defaults(handler=cmd_compare, func=cmd_compare)

    t = subparsers.add_parser("trend", help="one HTML page of each series' figures across nightly runs",
                              description="Read every report/summary.json under the given run directories or "
                                          "folders of runs (e.g. one per night) and write one page: per series (what "
                                          "was run: run.json's source, client, version, protocol, assignor, "
                                          "membership, a hash of the other settings), the verdict of each run and "
                                          "lines of re-deliveries, lost records and time to stable, oldest run first, "
                                          "so a regression shows as a break. A point outside the min-max of its "
                                          "series' last 10 nights is marked, and listed in trend.json beside the page.",
                              epilog="exit codes: 0 written, 2 bad input (the message names the file and field)")
    t.add_argument("runs", type=Path, nargs="+", metavar="RUNS", help="run directories, or folders holding them")
    t.add_argument("--out", type=Path, default=Path("trend.html"), help="the page to write, trend.json beside it (default: ./trend.html)")
    t.set_defaults(handler=cmd_trend, func=cmd_trend)

    k = subparsers.add_parser("compact", help="rewrite a run's produced/ and consumed/ JSONL logs as Parquet",
                              description="Rewrite produced/*.jsonl and consumed/*.jsonl as Parquet: every row, "
                                          "column and the row order kept, about 14x smaller, analysed 4-7x faster "
                                          "by the analysis. A file with a line the analysis would report stays "
                                          "JSONL, so that `analyze` names the line. `kafka-chaos run` does this "
                                          "itself at the end of a run (scenario: run.log_format).",
                              epilog="exit codes: 0 done (files left as JSONL are listed), 2 no such run directory")
    k.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    k.set_defaults(handler=cmd_compact, func=cmd_compact)


def _member_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: expected member names separated by commas, or `any`")
    return names


def _spark_property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip().startswith("spark."):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a Spark property KEY=VALUE, KEY starting with spark.")
    return key.strip(), value


def _spark_args(p) -> None:
    p.add_argument("--master", metavar="URL", help="Spark master (default: local[*])")
    p.add_argument("--remote", metavar="sc://HOST:PORT", help="Spark Connect server instead of a local session")


class Progress:
    """Prints `[  1.2s] phase: detail` lines on stderr (stdout keeps the summary)."""

    def __init__(self, stream=None):
        self.t0 = time.monotonic()
        self.stream = stream

    def __call__(self, phase: str, detail: str = "") -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {phase}{': ' + detail if detail else ''}",
              file=self.stream or sys.stderr, flush=True)


def exit_code(valid) -> int:
    return EXIT_VALID if valid is True else EXIT_INVALID if valid is False else EXIT_UNKNOWN


def text_summary(s: dict) -> str:
    word = {True: "VALID", False: "INVALID"}.get(s["valid"], "UNKNOWN")
    counts = s["anomaly_counts"]
    found = ", ".join(f"{n:,} {t}" for t, n in counts.items() if n)
    lines = [f"verdict: {word}" + (f" ({found})" if found else " (no anomalies)")]
    f = lambda x: "–" if x is None else f"{x:,}"  # noqa: E731
    lines.append(f"produced {f(s['produced_records'])} acked · consumed {f(s['consumed_rows'])} rows · "
                 f"{f(s['duplicated_offsets'])} duplicated offsets ({f(s['duplicate_extra_deliveries'])} extra deliveries) · "
                 f"{f(s['lost_records'])} lost · {f(s['rebalances'])} rebalances · {len(s['faults'])} faults")
    from analysis.pages.compare import check_ran
    skipped = [f"{k} ({v.get('reason')})" for k, v in s["checks"].items() if not check_ran(s, k) and v["status"] != "crashed"]
    broken = [f"{k} ({v.get('error') or v.get('reason')})" for k, v in s["checks"].items() if v["status"] in ("crashed", "unknown")]
    if skipped:
        lines.append("not run (could not verify): " + ", ".join(skipped))
    if broken:
        lines.append("unknown: " + ", ".join(broken))
    for w in s.get("warnings") or []:
        lines.append(f"warning: {w}")
    lines.append(f"analysis took {s['analysis_seconds']:.1f}s")
    lines.append(f"report: {Path(s['run_dir']) / 'report' / 'index.html'}")
    return "\n".join(lines)


def _guarded(command: str, work):
    """(result, None), or (None, exit code) after one line on stderr: bad input (2), or no verdict (3): no Spark, a
    failed service, a failed analysis, or any error of ours (a bug: one line, never a traceback that a CI would read
    as exit 1, "anomalies found")."""
    try:
        return work(), None
    except InputError as exc:
        print(f"kafka-chaos {command}: bad input: {exc}", file=sys.stderr)
        return None, EXIT_BAD_INPUT
    except Exception as exc:
        print(f"kafka-chaos {command}: {failure_line(exc)}", file=sys.stderr)
        return None, EXIT_UNKNOWN


def failure_line(exc: Exception) -> str:
    """One line for an analysis that gave no verdict: our own errors say it themselves; another names its type."""
    from analysis.errors import AnalysisFailed
    from analysis.service import ServiceError
    if isinstance(exc, (AnalysisFailed, SparkUnavailable, ServiceError)):
        return str(exc)
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"the analysis failed: {type(exc).__name__}: {text}"


def analyze_run(run_dir, *, master=None, remote=None, conf=None, progress=None, **options) -> dict:
    """One analysis as the CLIs run it: by the warm analysis service (analysis/service.py) unless it is off or
    --master/--remote/--conf name a Spark of their own, else in this process."""
    from analysis import service
    if service.enabled() and not master and not remote and not conf:
        return service.analyze(run_dir, progress=progress, **options)
    from analysis.job import analyze
    return analyze(run_dir, master=master, remote=remote, conf=conf, progress=progress, **options)


def cmd_analyze(args) -> int:
    if args.conf and args.remote:
        print("kafka-chaos analyze: bad input: --conf sets a --master session's properties; a Spark Connect server "
              "(--remote) has its own", file=sys.stderr)
        return EXIT_BAD_INPUT
    progress = Progress()
    summary, failed = _guarded("analyze", lambda: analyze_run(
        args.run_dir, master=args.master, remote=args.remote, conf=dict(args.conf or []),
        grace_ms=args.grace_ms, stall_ms=args.stall_ms,
        expected_fatal=[n for names in args.expected_fatal or [] for n in names],
        protocol=args.protocol, max_examples=args.max_examples, progress=progress))
    if failed is not None:
        return failed
    progress("done")
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(text_summary(summary))
    return exit_code(summary["valid"])


def cmd_compare(args) -> int:
    from analysis.job import compare
    from analysis.pages.compare import render_markdown
    table, failed = _guarded("compare", lambda: compare(
        args.runs, master=args.master, remote=args.remote, grace_ms=args.grace_ms,
        reanalyze=args.reanalyze, progress=Progress(), out=args.out))
    if failed is not None:
        return failed
    print(render_markdown(table), end="")
    print(f"written: {args.out / 'compare.md'}, {args.out / 'compare.json'}")
    verdicts = [r["valid"] for r in table["runs"]]
    if any(v is False for v in verdicts):
        return EXIT_INVALID
    if any(v is not True for v in verdicts):
        return EXIT_UNKNOWN
    return EXIT_VALID


def cmd_trend(args) -> int:
    from analysis.pages.trend import write
    try:
        out = write(args.runs, args.out)
    except InputError as exc:
        print(f"kafka-chaos trend: bad input: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"written: {out}")
    return EXIT_VALID


def cmd_compact(args) -> int:
    from analysis.rundir.compact import compact
    if not (args.run_dir / "produced").is_dir() and not (args.run_dir / "consumed").is_dir():
        print(f"kafka-chaos compact: bad input: {args.run_dir}: no produced/ or consumed/ folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("\n".join(compact(args.run_dir).lines()))
    return EXIT_VALID


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m analysis", description="kafka-chaos analysis (the checker)",
                                     epilog=analyze_epilog, formatter_class=EpilogWhenShown)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_parser(sub)
    if argv and argv[0] not in ("analyze", "compare", "trend", "compact", "-h", "--help"):
        argv = ["analyze"] + argv  # python -m analysis RUN_DIR
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    return args.handler(args)
