"""disk_full (faults/disk.py, issue 24 item 6) on a cluster whose brokers have a log disk of their own
(cluster.log_disk_mb, harness/cluster/log_disk.py): what Kafka 4.3.1 does when a node's only log directory fills, what
the group sees, that the run completes and is analysed; the option's validation; and the disks' cleanup."""
import os
import secrets
import socket
import subprocess

import pytest

from analysis.api import analyze
from harness.cluster import log_disk
from harness.cluster.external import ExternalBroker, ExternalClusterError
from harness.plugin.assertions import ChaosRun
from harness.run import run_scenario
from harness.scenario import ScenarioError, parse_scenario, parse_with_unique_names
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def disk_full_scenario(**cluster) -> dict:
    scenario = catalog("default")
    scenario["cluster"] = cluster
    scenario["producer"] = {"records": 60000, "rate": 2000}
    scenario["analysis"] = {"grace_ms": 3000}
    scenario["faults"] = [{"kind": "disk_full", "target": "coordinator", "at_s": 8, "duration_s": 10}]
    return scenario


def test_disk_full_without_a_log_disk_is_refused_naming_the_field():
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.kind: disk_full .*set cluster\.log_disk_mb"):
        parse_scenario(disk_full_scenario())
    with pytest.raises(ScenarioError, match=r"cluster\.log_disk_mb: .*greater than or equal to 32"):
        parse_scenario(disk_full_scenario(log_disk_mb=8))


def test_disk_full_on_the_session_cluster_without_log_disks_is_refused_before_anything_starts(kafka_cluster, tmp_path):
    """The session cluster is started without cluster.log_disk_mb: the refusal comes before the run's topic or any
    member, not at inject (the stand-in cluster's cases: tests/harness/test_given_cluster_checks.py)."""
    parsed = parse_with_unique_names(disk_full_scenario(log_disk_mb=64), secrets.token_hex(3), "disk_full")
    with pytest.raises(ScenarioError, match=r"^cluster\.log_disk_mb: "):
        run_scenario(parsed, tmp_path / "runs", cluster=kafka_cluster)
    topics = kafka_cluster.admin().list_topics(timeout=15).topics
    assert not [t.name for t in parsed.topics if t.name in topics], "the run created its topic before refusing"


@pytest.mark.parametrize("operation", ["fill_log_dir", "free_log_dir"])
def test_an_external_broker_refuses_to_fill_its_log_dir(operation):
    with pytest.raises(ExternalClusterError, match="^kafka-2: cannot (fill|free) the log directory of a broker of an external"):
        getattr(ExternalBroker(2, "kafka-2", "127.0.0.1:9092"), operation)()


def test_a_disk_left_by_a_killed_harness_is_swept_and_a_live_ones_is_kept():
    dead = subprocess.Popen(["true"])
    dead.wait()
    left, live = log_disk.create(f"hA-test-{secrets.token_hex(3)}", 32), log_disk.create(f"hA-test-{secrets.token_hex(3)}", 32)
    try:
        (left.path / "owner").write_text(f"{socket.gethostname()}:{dead.pid}")
        assert left.fill() > 20 * 2**20 and left.free_bytes() == 0
        log_disk.sweep_stale_disks()
        assert not left.path.exists() and not os.path.ismount(left.mount)
        assert os.path.ismount(live.mount)
    finally:
        log_disk.remove(left)
        log_disk.remove(live)
    assert not os.path.ismount(live.mount) and not live.path.exists()


@pytest.mark.slow
def test_a_full_log_disk_halts_the_node_and_the_heal_brings_it_back(tmp_path):
    """The coordinator's disk filled: Kafka takes its only log directory offline and halts the node; the group's
    coordinator moves; the heal frees the disk and restarts the broker (its data kept); nothing is lost."""
    parsed = parse_with_unique_names(disk_full_scenario(log_disk_mb=256), secrets.token_hex(3), "disk_full")
    outcome = run_scenario(parsed, tmp_path / "runs", source="test_disk_full")
    assert outcome.errors == [], outcome.errors  # the heal's start_broker raises if the broker does not rejoin
    run = ChaosRun(outcome.run_dir, analyze(outcome.run_dir, **parsed.analysis.options()))
    assert run.summary["produced_records"] == 60000, run.summary
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    [fault] = rows(outcome.run_dir, "faults")
    assert fault["kind"] == "disk_full" and fault["healed_at_ms"] is not None, fault
    assert fault["filled_bytes"] > 200 * 2**20, fault  # most of the 256 MB disk
    said = "\n".join(fault["kafka_said"])
    assert fault["broker_down_at_heal"] is True, fault
    assert "No space left on device" in said and "Shutdown broker because all log dirs" in said, said
    assert fault["coordinator_after"] != fault["coordinator_before"], fault
    assert not list(log_disk.DISKS_ROOT.glob(f"{outcome.run_dir.name}-*")), "the run's disks outlived its cluster"
