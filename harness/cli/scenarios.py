"""`kafka-chaos scenarios`: the scenario catalog, one line a file."""
from __future__ import annotations

from pathlib import Path

from harness.cli.common import CATALOG, EXIT_OK
from harness.bad_input import ScenarioError


def add_parser(commands) -> None:
    parser = commands.add_parser("scenarios", help="list the scenario catalog, one line each",
                                    description="List the scenario files of a folder (default: the project's "
                                    "scenarios/): the file, and the one line of what it shows. Each file's opening "
                                    "comment names the KIP or document it checks and what to expect.")
    parser.add_argument("--dir", type=Path, default=CATALOG, help=f"the folder (default: {CATALOG})")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.scenario import catalog
    if not args.dir.is_dir():
        raise ScenarioError(f"--dir: {args.dir} is not a folder")
    entries = catalog(args.dir)
    if not entries:
        raise ScenarioError(f"--dir: {args.dir} has no scenario file (*.yaml)")
    width = max((len(path.name) for path, _ in entries), default=0)
    for path, scenario in entries:
        print(f"{path.name:<{width}}  {scenario.description or '(no description)'}")
    return EXIT_OK
