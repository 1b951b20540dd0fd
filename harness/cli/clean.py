"""`kafka-chaos clean`: what crashed runs left (containers, networks, log disks, frozen workloads), and the analysis service."""
from __future__ import annotations


from harness.cli.common import EXIT_OK


def add_parser(commands) -> None:
    parser = commands.add_parser("clean", help="remove containers and networks left by crashed runs; stop the analysis service",
                                description="Removes what a harness on this host left when it ended without cleaning up: "
                                            "containers, networks and log disks whose owner (host, boot, PID namespace, PID "
                                            "and start time) is provably gone. Another host's or PID namespace's are never "
                                            "touched, nor a live run's, except with --all.")
    parser.add_argument("--all", action="store_true", help="every container a harness started on this Docker engine, of "
                       "runs still going and of other hosts' too; each one removed is named with its owner")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from harness.cluster.containers import NoDockerEngine, sweep_stale_containers
    from workloads.services import sweep_stale_workloads
    from analysis.api import service
    try:
        containers = f"removed {sweep_stale_containers(include_live=args.all, say=print if args.all else None)} container(s)"
    except NoDockerEngine as exc:  # nothing of ours can be running (as `make clean` says)
        containers = f"{exc}: no container to remove"
    print(f"{containers}, thawed {sweep_stale_workloads()} frozen workload process(es) of dead runs"
          f"{', stopped the analysis service' if service.stop() else ''}")
    return EXIT_OK
