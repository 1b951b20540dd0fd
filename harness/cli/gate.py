"""`kafka-chaos gate`: the nightly job's verdict from what one night wrote."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import EXIT_ANOMALIES, EXIT_OK
from harness.bad_input import ScenarioError


def add_parser(commands) -> None:
    parser = commands.add_parser("gate", help="the nightly job's verdict from what one night wrote",
                               description="Read a night's folder (junit.xml of the slow families, zoo.json, "
                               "exit-codes) and the trend page's trend.json; write summary.md, the job summary: "
                               "which catalog expectations failed, which zoo bugs moved and why, which harness steps "
                               "failed, which trend points fell outside their series.",
                               epilog="exit codes: 0 green (nothing changed); 1 red (the summary says what changed); "
                                      "2 bad input", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("night", type=Path, help="the night's folder (make nightly: nightly/<date>)")
    parser.add_argument("--trend", type=Path, default=None, help="the trend page's trend.json (default: none)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.nightly import gate
    if not args.night.is_dir():
        raise ScenarioError(f"night: {args.night} is not a folder")
    verdict = gate.judge(args.night, args.trend)
    text = verdict.markdown(args.night)
    (args.night / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return EXIT_ANOMALIES if verdict.red else EXIT_OK
