"""`kafka-chaos validate`: a scenario checked and printed with every default, or its schedule, or its plan."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli.common import EXIT_OK


def add_parser(commands) -> None:
    parser = commands.add_parser("validate", help="check a scenario file and print it with every default filled in",
                                   description="Check a scenario and print it with every default filled in; with "
                                   "--schedule, print the fault schedule the run would follow (random_faults drawn from its seed); "
                                   "with --plan, the run's whole plan (plan.json; no cluster is needed).")
    parser.add_argument("scenario", type=Path)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--schedule", action="store_true", help="print the fault schedule instead (YAML)")
    shown.add_argument("--plan", action="store_true", help="print the run's plan instead (JSON, as plan.json): the "
                       "client releases (offline: one not on this machine yet stays `pending`), every member, the "
                       "topics and the expanded fault schedule")
    parser.set_defaults(handler=run)


def run(args) -> int:
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
