"""The suite against a cluster it did not start: compose.yaml brought up with docker-compose on the locally
built images, a user's own test file run by pytest with `--kafka-backend external` (no import from the
project), a catalog scenario on it, and the compose cluster taken down again."""
import json
import secrets
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
import requests

from harness.cluster.external import ExternalCluster
from kafkanet.waiting import NotYet, require

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP, TOXIPROXY = "127.0.0.1:29091", "http://127.0.0.1:8474"

# slow: a compose cluster of its own and a whole scenario on it (about 90 s); `make test` stays inside its 30 minutes
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.skipif(shutil.which("docker-compose") is None,
                                                                         reason="docker-compose is not installed (make setup installs it)")]

USER_TEST = f'''
import pathlib
import yaml

def catalog(name):
    return yaml.safe_load((pathlib.Path({str(ROOT / "scenarios")!r}) / f"{{name}}.yaml").read_text())

def test_dynamic_bounce_on_your_cluster(chaos_run):
    scenario = catalog("dynamic-bounce")
    scenario["producer"] = {{"records": 24000, "rate": 2000}}
    scenario["faults"] += [{{"kind": "broker_freeze", "target": "kafka-2", "at_s": 2, "duration_s": 2}},
                           {{"kind": "member_cut", "target": "member-1", "at_s": 2, "duration_s": 2}},
                           {{"kind": "latency", "target": "coordinator", "at_s": 1, "duration_s": 3, "latency_ms": 200}}]
    run = chaos_run(scenario)
    assert [s["fault"] for s in run.skipped_faults] == ["broker_freeze@2s on kafka-2", "member_cut@2s on member-1"]
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    run.assert_rebalances(at_most=0)  # fails on purpose: a dynamic member's bounce is two rebalances
'''


def three_brokers_take_a_topic() -> bool:
    cluster = ExternalCluster(BOOTSTRAP).start()
    if len(cluster.brokers) != 3:
        raise NotYet(f"{len(cluster.brokers)} of 3 brokers")
    cluster.create_topic(f"ready-{secrets.token_hex(3)}", 1, 3)
    return True


@pytest.fixture(scope="module")
def compose_cluster():
    project = f"kafka-chaos-test-{secrets.token_hex(3)}"
    compose = ["docker-compose", "-p", project, "-f", str(ROOT / "compose.yaml"), "--env-file", str(ROOT / "versions.env")]
    subprocess.run([*compose, "up", "-d"], check=True, capture_output=True, timeout=300)
    try:
        require(three_brokers_take_a_topic, 120, "the compose cluster was not ready", error=pytest.fail.Exception,
                interval_s=1)
        yield
    finally:
        subprocess.run([*compose, "down", "-v"], capture_output=True, timeout=300)


SECRET = f"never-written-{secrets.token_hex(4)}"


def test_a_users_own_test_runs_a_catalog_scenario_on_an_external_cluster(compose_cluster, pytester, monkeypatch):
    pytester.makepyfile(test_user=USER_TEST)
    # a credential from the environment reaches every client, and nothing of the run writes it down
    # (the compose cluster is PLAINTEXT: librdkafka ignores SASL settings there)
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_SASL_USERNAME", "chaos")
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_SASL_PASSWORD", SECRET)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("--kafka-backend", "external", "--bootstrap-servers", BOOTSTRAP,
                                           "--toxiproxy-url", TOXIPROXY, "--allow-destructive", f"--junitxml={junit}",
                                           "-p", "no:cacheprovider", timeout=600)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    # the only failure is the one asked for, with what happened and where the report is
    assert "rebalance(s) in the run, expected at most 0" in out, out
    assert "kafka-chaos runs" in out and "run directory: " in out
    report = Path(out.split("\nreport: ", 1)[1].split()[0])
    assert report.is_file() and report.name == "index.html"
    run_dir = report.parents[1]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["lost_records"] == 0 and summary["produced_records"] == 24000
    # the latency went onto the user's Toxiproxy (the coordinator's proxy) and is gone again
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    latency = [f for f in faults if f["kind"] == "latency"][-1]  # a row is written at inject and again at heal
    assert latency["healed_at_ms"] and [p for p in latency["proxies"] if p.endswith("-client")]
    proxies = requests.get(f"{TOXIPROXY}/proxies", timeout=10).json()
    assert all(not p["toxics"] and p["enabled"] for p in proxies.values())
    assert json.loads((run_dir / "run.json").read_text())["skipped_faults"][1]["reason"].startswith("needs a Toxiproxy proxy per")
    assert json.loads((run_dir / "cluster.json").read_text())["external"] is True
    written = [p for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not written and SECRET not in out
    # JUnit XML: the run's summary as the test case's properties
    props = {p.get("name"): p.get("value") for p in ElementTree.parse(junit).iter("property")}
    assert props["kafka_chaos.run_dir"] == str(run_dir)
    assert props["kafka_chaos.lost_records"] == "0" and props["kafka_chaos.produced_records"] == "24000"
    assert props["kafka_chaos.report"] == str(report)
