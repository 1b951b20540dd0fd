"""pytest plugin (entry point `kafka_chaos`): chaos tests on a real cluster, with no import from the project.

    @pytest.mark.chaos
    def test_coordinator_freeze(chaos_run):
        run = chaos_run({"faults": [{"kind": "broker_freeze", "target": "coordinator", "at_s": 5, "duration_s": 8}]})
        run.assert_no_loss()
        run.assert_duplicates_within_budget()
        run.assert_time_to_stable(below_s=30)

`kafka_cluster` is one cluster for the whole session: containers the harness starts (the default), or a
cluster you run (`--kafka-backend external --bootstrap-servers HOST:PORT [--toxiproxy-url URL]`). Each
`chaos_run` gets its own topics and group on it (names end in a random suffix) and its own run directory
(under the test's tmp_path, or `--keep-runs DIR`). It returns a run whose `assert_*` methods
(harness/plugin/assertions.py) fail with what happened and the report's path. A failing test prints its runs'
directories and reports; the JUnit XML (`--junitxml`) carries each run's summary as properties.
`load_chaos_run(run_dir)` gives the same ChaosRun, report and properties for a run directory that already exists,
with no cluster.
"""
from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest

from harness.plugin.assertions import ChaosRun, undecided_checks
from harness.scenario import ClusterSpec, parse_with_unique_names, read_yaml, with_workdir

# The session cluster starts before any scenario is known: lanes for up to 8 members, 2 member hosts and the producer.
SESSION_LANES = tuple(f"member-{n}" for n in range(1, 9)) + ("host-1", "host-2", "producer-1")
RUNS_KEY = pytest.StashKey[list]()
JUNIT_FIELDS = ("valid", "produced_records", "consumed_rows", "lost_records", "duplicate_extra_deliveries", "rebalances")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("kafka-chaos", "chaos tests on a real Kafka cluster")
    group.addoption("--kafka-backend", choices=("containers", "external"), default="containers",
                    help="containers: the harness starts a KRaft cluster behind Toxiproxy for the session (default); "
                         "external: use the cluster at --bootstrap-servers")
    group.addoption("--bootstrap-servers", metavar="HOST:PORT[,...]", help="the external cluster's client listener")
    group.addoption("--toxiproxy-url", metavar="URL",
                    help="a Toxiproxy in front of the external cluster's brokers (each broker must advertise its proxy): "
                         "enables the faults on a broker's client link")
    group.addoption("--allow-destructive", action="store_true",
                    help="external cluster: allow the faults that touch the cluster (and every other client of it)")
    group.addoption("--kafka-version", metavar="X.Y.Z", help="containers: the brokers' Kafka release (default: versions.env)")
    group.addoption("--keep-runs", metavar="DIR", type=Path,
                    help="write every run directory under DIR/<test name>/ and keep it (default: the test's tmp_path)")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "chaos: a test that runs scenarios on a real Kafka cluster (chaos_run)")
    config.addinivalue_line("markers", "slow: a long real-cluster test; leave it out with -m 'not slow'")
    backend, servers = config.getoption("kafka_backend"), config.getoption("bootstrap_servers")
    if backend == "external" and not servers:
        raise pytest.UsageError("--kafka-backend external needs --bootstrap-servers HOST:PORT")
    if backend == "containers":
        for option in ("bootstrap_servers", "toxiproxy_url", "allow_destructive"):
            if config.getoption(option):
                raise pytest.UsageError(f"--{option.replace('_', '-')} goes with --kafka-backend external")
    if backend == "external" and config.getoption("kafka_version"):
        raise pytest.UsageError("--kafka-version goes with --kafka-backend containers (an external cluster runs what it runs)")


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if "chaos_run" in getattr(item, "fixturenames", ()):
            item.add_marker("chaos")


@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig):
    if pytestconfig.getoption("kafka_backend") == "external":
        from harness.cluster.external import ExternalCluster
        cluster = ExternalCluster(pytestconfig.getoption("bootstrap_servers"), pytestconfig.getoption("toxiproxy_url"),
                                  pytestconfig.getoption("allow_destructive"), client_lanes=SESSION_LANES)
    else:
        from harness.cluster.kafka import KafkaCluster
        cluster = KafkaCluster(ClusterSpec(kafka_version=pytestconfig.getoption("kafka_version")),
                               run_id=f"pytest-{secrets.token_hex(3)}", client_lanes=SESSION_LANES)
    with cluster:
        yield cluster


@pytest.fixture
def chaos_run(kafka_cluster, request, tmp_path):
    """Run a scenario (a dict, as in a scenario file, or a scenario file's path, relative to the test file) on the
    session cluster, analyse it, return a ChaosRun. A command member starts in the scenario file's folder (a dict's:
    the test file's)."""
    from harness.run import run_scenario
    keep = request.config.getoption("keep_runs")
    runs_root = keep / re.sub(r"[^\w.-]+", "_", request.node.name) if keep else tmp_path / "runs"

    def run(scenario: dict | str | Path, analyze: bool = True) -> ChaosRun:
        kafka_cluster.reset_faults()  # one test's leftovers must not poison the next
        if isinstance(scenario, (str, Path)):  # a scenario file: its command members start in its folder
            path = Path(scenario) if Path(scenario).is_absolute() else request.path.parent / scenario
            scenario, folder, source = read_yaml(path, "scenario"), path.parent, str(path)
        else:  # a scenario as a dict: in the test file's folder
            folder, source = request.path.parent, "chaos_run"
        parsed = parse_with_unique_names(with_workdir(scenario, folder), secrets.token_hex(3), source)
        outcome = run_scenario(parsed, runs_root, cluster=kafka_cluster, source=request.node.nodeid)
        if analyze and parsed.analysis.enabled:
            from analysis.api import analyze as analyze_run
            outcome.summary = analyze_run(outcome.run_dir, **parsed.analysis.options())
        result = ChaosRun(outcome.run_dir, outcome.summary, outcome.phases, outcome.skipped_faults, outcome.errors,
                          outcome.drained, outcome.unsettled)
        return _shown(request.node, result)

    return run


@pytest.fixture
def load_chaos_run(request):
    """A run directory that already exists (kept with --keep-runs, or written by your own application and
    analysed) as a ChaosRun, with no cluster: shown on failure and in the JUnit XML like a chaos_run's."""
    def load(run_dir) -> ChaosRun:
        return _shown(request.node, ChaosRun.load(Path(run_dir)))

    return load


def _shown(node, run: ChaosRun) -> ChaosRun:
    """The test's run, listed in its failure report and in its JUnit XML properties: where the run is, its summary's
    headline figures and the checks that gave no verdict (a `valid` of true with checks not decided verified less)."""
    node.stash.setdefault(RUNS_KEY, []).append(run)
    node.user_properties.append(("kafka_chaos.run_dir", str(run.run_dir)))
    if run.summary is not None:
        node.user_properties.append(("kafka_chaos.report", str(run.report)))
        node.user_properties += [(f"kafka_chaos.{key}", str(run.summary.get(key))) for key in JUNIT_FIELDS]
        node.user_properties.append(("kafka_chaos.checks_not_decided", undecided_checks(run.summary.get("checks", {}))))
    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    runs = item.stash.get(RUNS_KEY, [])
    if report.failed and runs:
        report.sections.append(("kafka-chaos runs", "\n".join(
            f"run directory: {r.run_dir}" + (f"\nreport: {r.report}" if r.report.is_file() else "") for r in runs)))
    return report
