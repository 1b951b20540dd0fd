"""The Java member program (issue 39) without a cluster: its jar is built once per version of its sources, the
launcher's command line, and the program's pure parts against the Python member they mirror (client settings, the
`started` facts, the JSON rows, the consumption sequence, the processing delays). Last, a whole host against a
bootstrap address where no broker listens: its members start, one is crashed and restarted through the control
file, and SIGTERM stops them all with exit code 0. (With a broker: tests/cluster/test_java_host_cluster.py.)"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from polling import read_jsonl, wait_for

from workloads import java_build, java_host
from workloads.config import ClientRelease, HostConfig, MemberConfig, ProcessingConfig, encode
from workloads.control import host_ack_path, host_control_path, write_atomically
from workloads.history import started_facts
from workloads.app import consumer_settings

KAFKA_CLIENTS = "4.3.1"


@pytest.fixture(scope="module")
def jar() -> Path:
    return java_build.member_jar()


@pytest.fixture(scope="module")
def kafka_libs() -> str:
    """The Kafka image's libs/* (kafka-clients, jackson, the SLF4J binding), as extracted for the Java members."""
    from harness.releases import client_jars
    found = sorted(client_jars.CACHE.glob(f"*/libs/kafka-clients-{KAFKA_CLIENTS}.jar"))
    if found:
        return str(found[-1].parent / "*")
    try:
        from harness.releases.versions import kafka_image
        return client_jars.java_client(kafka_image())[0]
    except Exception as exc:  # no engine or no image: `make setup` builds them
        pytest.skip(f"the Kafka image's jars are not at hand: {exc}")


def member(name: str = "member-1", **changes) -> MemberConfig:
    cfg = MemberConfig(member=name, run_dir="/tmp/run", client="java-member",
                       release=ClientRelease(classpath="/libs/*", log4j_config="/config/tools-log4j2.properties"),
                       bootstrap_servers="127.0.0.1:1", group_id="g", topics=["t1", "t2"], pattern=None,
                       metadata_refresh_ms=None, protocol="classic", assignor="cooperative-sticky", remote_assignor=None,
                       session_timeout_ms=10000, heartbeat_interval_ms=1000, max_poll_interval_ms=300000, commit="sync",
                       auto_commit_interval_ms=None, processing=ProcessingConfig(), batch_size=500)
    return replace(cfg, **changes)


def java(kafka_libs: str, jar: Path, main: str, *args: str, env: dict | None = None, stdin: str = "") -> str:
    done = subprocess.run(["java", "-cp", f"{kafka_libs}{os.pathsep}{jar}", main, *args], input=stdin,
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


# -------------------------------------------------------------------------------------------------- the build
def test_the_jar_is_built_into_its_sources_hash_whole_and_only_once(tmp_path, monkeypatch):
    sources = tmp_path / "java"
    shutil.copytree(java_build.SOURCES, sources, ignore=shutil.ignore_patterns("target"))
    cache = tmp_path / "cache"
    jar = java_build.member_jar(sources, cache)
    assert jar == cache / java_build.build_key(sources) / java_build.JAR_NAME
    assert sorted(p.name for p in cache.iterdir()) == [jar.parent.name]  # no .partial left behind, no build/ inside
    assert sorted(p.name for p in jar.parent.iterdir()) == [java_build.JAR_NAME]
    with zipfile.ZipFile(jar) as archive:
        assert "org/kafkachaos/MemberHost.class" in archive.namelist()
        assert "Main-Class: org.kafkachaos.MemberHost" in archive.read("META-INF/MANIFEST.MF").decode()
        assert "org/kafkachaos/contract/ContractLog.class" in archive.namelist()  # the contract library, shaded in
        assert not any(n.startswith(("org/apache/kafka/", "com/fasterxml/")) for n in archive.namelist())  # the image's
    monkeypatch.setattr(java_build, "_build", lambda *a: pytest.fail("built again with unchanged sources"))
    assert java_build.member_jar(sources, cache) == jar


def test_a_changed_source_or_pom_is_another_build_and_target_is_not_a_source(tmp_path):
    sources = tmp_path / "java"
    shutil.copytree(java_build.SOURCES, sources, ignore=shutil.ignore_patterns("target"))
    before = java_build.sources_hash(sources)
    (sources / "target").mkdir()
    (sources / "target" / "classes.txt").write_text("a manual build's output")
    assert java_build.sources_hash(sources) == before
    source = sources / "src" / "main" / "java" / "org" / "kafkachaos" / "Member.java"
    source.write_text(source.read_text() + "\n")
    assert java_build.sources_hash(sources) != before


def test_a_failed_build_leaves_nothing_that_looks_built(tmp_path):
    sources = tmp_path / "java"
    shutil.copytree(java_build.SOURCES, sources, ignore=shutil.ignore_patterns("target"))
    broken = sources / "src" / "main" / "java" / "org" / "kafkachaos" / "Broken.java"
    broken.write_text("package org.kafkachaos; class Broken { not java }")
    with pytest.raises(java_build.JavaBuildError, match="Broken.java"):
        java_build.member_jar(sources, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_build_entry_point_prints_the_jar(jar):
    done = subprocess.run([sys.executable, "-m", "workloads.java_build"], capture_output=True, text=True, timeout=600,
                          cwd=Path(java_build.__file__).parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(jar), str(java_build.streams_jar())]  # make setup's: both programs


# -------------------------------------------------------------------------------------------------- the launcher
def test_the_command_line_puts_the_release_and_the_jar_on_the_classpath_with_a_heap_per_member():
    cfg = HostConfig(host="host-1", run_dir="/tmp/run", members=[member(f"member-{i}") for i in range(1, 4)])
    assert java_host.command_line(cfg, Path("/cache/kafka-chaos-member.jar")) == [
        "java", "-Xmx88m", "-XX:+UseSerialGC", "-Dlog4j2.configurationFile=/config/tools-log4j2.properties",
        "-cp", "/libs/*:/cache/kafka-chaos-member.jar", "org.kafkachaos.MemberHost"]
    assert java_host.heap_mb(200) == 64 + 8 * 200


def test_the_launcher_replaces_itself_with_the_jvm(monkeypatch, tmp_path):
    cfg = HostConfig(host="host-1", run_dir=str(tmp_path), members=[member(release=ClientRelease(classpath="/libs/*"))])
    monkeypatch.setenv(*next(iter(encode(cfg).items())))
    monkeypatch.setattr(java_host, "member_jar", lambda: Path("/j.jar"))
    execs = []
    monkeypatch.setattr(java_host.os, "execvp", lambda file, argv: execs.append((file, argv)))
    java_host.main()
    assert execs == [("java", ["java", "-Xmx72m", "-XX:+UseSerialGC", "-cp", "/libs/*:/j.jar", java_host.MAIN_CLASS])]


# -------------------------------------------------------------------------------------------------- pure parts
JAVA_NAMES = {"partition.assignment.strategy": {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                                                "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
              "topic.metadata.refresh.interval.ms": "metadata.max.age.ms"}


def as_java(python_settings: dict, cfg: MemberConfig) -> dict[str, str]:
    """member.py's librdkafka settings in the Java client's names, plus what only the Java member sets."""
    out = {}
    for key, value in python_settings.items():
        if key == "partition.assignment.strategy":
            value = JAVA_NAMES[key][value]
        key = JAVA_NAMES.get(key, key) if isinstance(JAVA_NAMES.get(key), str) else key
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    return {**out, "max.poll.records": str(cfg.batch_size), "key.deserializer": deserializer,
            "value.deserializer": deserializer}


MEMBERS = [
    member("member-1"),
    member("member-2", protocol="consumer", assignor=None, remote_assignor="uniform", commit="auto",
           auto_commit_interval_ms=700, instance_id="instance-2", metadata_refresh_ms=3000),
    member("member-3", assignor="range", commit="auto", extra={"fetch.min.bytes": 10, "check.crcs": False},
           host="host-1", hosted_settings={"fetch.max.bytes": 4 << 20}),
    member("member-4", protocol="consumer", assignor=None, commit="before_process", pattern="t.*"),
]


def test_client_settings_and_started_facts_mirror_the_python_member(kafka_libs, jar, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_SECURITY_PROTOCOL", "PLAINTEXT")
    cfg = HostConfig(host="host-1", run_dir="/tmp/run", members=MEMBERS)
    out = [json.loads(line) for line in java(kafka_libs, jar, "org.kafkachaos.Check", "settings", env=encode(cfg)).splitlines()]
    assert [o["member"] for o in out] == [m.member for m in MEMBERS]
    for o, cfg in zip(out, MEMBERS):
        assert o["settings"] == as_java(consumer_settings(cfg), cfg), cfg.member
        assert list(o["started"].items()) == list(started_facts("java-member", KAFKA_CLIENTS, cfg).items())
    assert out[1]["settings"]["group.remote.assignor"] == "uniform" and "session.timeout.ms" not in out[1]["settings"]
    assert out[2]["started"]["hosted_settings"] == {"fetch.max.bytes": 4 << 20}


def test_librdkafka_security_settings_become_the_java_clients(kafka_libs, jar):
    env = {"KAFKA_CHAOS_CLIENT_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_CHAOS_CLIENT_SASL_MECHANISM": "SCRAM-SHA-512",
           "KAFKA_CHAOS_CLIENT_SASL_USERNAME": "chaos", "KAFKA_CHAOS_CLIENT_SASL_PASSWORD": 'p"w',
           "KAFKA_CHAOS_CLIENT_SSL_CA_LOCATION": "/ca.pem"}
    cfg = HostConfig(host="h", run_dir="/tmp/run", members=[member()])
    (out,) = [json.loads(line) for line in java(kafka_libs, jar, "org.kafkachaos.Check", "settings",
                                                env={**encode(cfg), **env}).splitlines()]
    settings = out["settings"]
    assert settings["security.protocol"] == "SASL_SSL" and settings["sasl.mechanism"] == "SCRAM-SHA-512"
    assert settings["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                            'username="chaos" password="p\\"w";')
    assert (settings["ssl.truststore.type"], settings["ssl.truststore.location"]) == ("PEM", "/ca.pem")
    assert not {"sasl.username", "sasl.password", "ssl.ca.location"} & set(settings)


def test_rows_are_written_byte_for_byte_as_pythons_json_dumps(kafka_libs, jar):
    rows = [{"topic": "t", "partition": 0, "offset": 12, "member": "member-1", "consumed_at_ms": 1764000000000,
             "key": None, "producer_id": "p", "seq": 7, "instance_id": None, "generation": -1, "client": "java-member",
             "n": 0},
            {"kind": "commit_failed", "offsets": {"t:0": 13, "t:1": None}, "detail": 'quote " backslash \\ tab \t nl \n',
             "fatal": True, "partitions": [], "x": False},
            {"key": "é ü 中 \u0001 \u007f \ufffd 😀", "nested": {"a": [1, [2, {"b": None}]]}}]
    written = java(kafka_libs, jar, "org.kafkachaos.Check", "json", stdin="".join(json.dumps(r) + "\n" for r in rows))
    assert written.splitlines() == [json.dumps(r, separators=(",", ":")) for r in rows]


def test_the_consumption_sequence_goes_on_after_the_last_row_of_the_log(kafka_libs, jar, tmp_path):
    log = tmp_path / "member-1.jsonl"
    assert java(kafka_libs, jar, "org.kafkachaos.Check", "sequence", str(log)).strip() == "0"
    rows = "".join(json.dumps({"topic": "t", "offset": i, "pad": "x" * 300, "n": i}) + "\n" for i in range(40))
    log.write_text(rows + '{"topic":"t","offset":40,"n"')  # a killed writer's half line
    assert java(kafka_libs, jar, "org.kafkachaos.Check", "sequence", str(log)).strip() == "40"
    assert log.read_text() == rows  # the fragment dropped, as history.drop_unterminated_tail drops it
    log.write_text(json.dumps({"topic": "t"}) + "\n")  # a log written before the column
    assert java(kafka_libs, jar, "org.kafkachaos.Check", "sequence", str(log)).strip() == "0"


def test_processing_delays_are_the_configured_ones_and_the_same_in_every_life(kafka_libs, jar):
    fixed = json.loads(java(kafka_libs, jar, "org.kafkachaos.Check", "delays",
                            json.dumps({"per_record_ms": 2, "per_batch_ms": 5}), "member-1", "3"))
    assert fixed == [25, 25, 25]  # 5 + 2 x 10 records
    spec = json.dumps({"per_batch_ms": 100, "distribution": "exponential", "seed": 7})
    drawn = json.loads(java(kafka_libs, jar, "org.kafkachaos.Check", "delays", spec, "member-1", "400"))
    assert drawn == json.loads(java(kafka_libs, jar, "org.kafkachaos.Check", "delays", spec, "member-1", "400"))
    assert drawn != json.loads(java(kafka_libs, jar, "org.kafkachaos.Check", "delays", spec, "member-2", "400"))
    assert 80 < sum(drawn) / len(drawn) < 125 and len(set(drawn)) > 50


# -------------------------------------------------------------------------------------------------- a host, no broker


@pytest.fixture
def silent_broker():
    """A bootstrap address that accepts connections and never answers (where nothing listens at all, 4.3.1's
    consumer-protocol client spins a core per member reconnecting)."""
    server = socket.create_server(("127.0.0.1", 0))
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield "127.0.0.1:%d" % server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def start_host(tmp_path, kafka_libs, jar, bootstrap, protocol, names, **host_settings):
    run_dir = tmp_path / "run"
    members = [member(n, run_dir=str(run_dir), protocol=protocol, release=ClientRelease(classpath=kafka_libs),
                      bootstrap_servers=bootstrap, host="host-1",
                      **({"assignor": None} if protocol == "consumer" else {})) for n in names]
    cfg = HostConfig(host="host-1", run_dir=str(run_dir), members=members, **host_settings)
    log = open(tmp_path / "host.log", "wb")
    jvm = subprocess.Popen(java_host.command_line(cfg, jar), env={**os.environ, **encode(cfg)}, stdout=log,
                           stderr=subprocess.STDOUT)
    return run_dir, jvm


def kinds(run_dir: Path, name: str) -> list[str]:
    return [e["kind"] for e in read_jsonl(run_dir / "events" / f"{name}.jsonl")]


def acked(run_dir: Path) -> dict | None:
    try:
        return json.loads(host_ack_path(run_dir, "host-1").read_text())
    except (OSError, ValueError):
        return None


def test_a_host_crashes_stops_restarts_its_members_through_its_control_file_and_sigterm_stops_all(
        kafka_libs, jar, tmp_path, silent_broker):
    names = ["member-1", "member-2", "member-3"]
    run_dir, jvm = start_host(tmp_path, kafka_libs, jar, silent_broker, "classic", names)
    try:
        wait_for(lambda: all(kinds(run_dir, n) == ["started"] for n in names), 30, "every member started")
        wait_for(lambda: acked(run_dir) == {"crashed": [], "down_at_ms": {}, "stopped": [], "running": names}, 5,
                 "the first ack")
        started = read_jsonl(run_dir / "events" / "member-2.jsonl")[0]
        assert {k: started[k] for k in ("client", "protocol", "commit", "host", "client_version")} == \
            {"client": "java-member", "protocol": "classic", "commit": "sync", "host": "host-1",
             "client_version": KAFKA_CLIENTS}

        asked = time.time() * 1000
        write_atomically(host_control_path(run_dir, "host-1"), {"crashed": ["member-2"], "stopped": ["member-3"]})
        wait_for(lambda: {k: v for k, v in acked(run_dir).items() if k != "down_at_ms"} ==
                 {"crashed": ["member-2"], "stopped": ["member-3"], "running": ["member-1"]},
                 20, "the crash and the stop acked")
        down = acked(run_dir)["down_at_ms"]
        assert list(down) == ["member-2"] and asked <= down["member-2"] <= time.time() * 1000  # its consumer brought down
        assert kinds(run_dir, "member-2") == ["started"]  # killed: nothing more, not even `stopped`
        assert kinds(run_dir, "member-3") == ["started", "stopped"]  # a clean close

        write_atomically(host_control_path(run_dir, "host-1"), {"crashed": [], "stopped": []})
        wait_for(lambda: acked(run_dir)["running"] == names, 20, "both running again")
        wait_for(lambda: kinds(run_dir, "member-2") == ["started", "started"], 20, "member-2 started again")
        wait_for(lambda: kinds(run_dir, "member-3") == ["started", "stopped", "started"], 20, "member-3 started again")
    finally:
        jvm.send_signal(signal.SIGTERM)
        code = jvm.wait(60)
    assert code == 0, (tmp_path / "host.log").read_text()
    assert [kinds(run_dir, n)[-1] for n in names] == ["stopped"] * 3
    out = (tmp_path / "host.log").read_text()
    assert "host-1: 3 members, open-file limit" in out and "member-2: crashed: closed remaining in the group" in out


def test_a_host_starts_its_members_one_after_another_at_its_spacing_from_its_start_time(kafka_libs, jar, tmp_path,
                                                                                        silent_broker):
    names = ["member-1", "member-2", "member-3"]
    launched = time.time() * 1000
    run_dir, jvm = start_host(tmp_path, kafka_libs, jar, silent_broker, "classic", names, start_after_s=1.0,
                              start_spacing_s=0.5)
    try:
        wait_for(lambda: all(kinds(run_dir, n) == ["started"] for n in names), 30, "every member started")
    finally:
        jvm.send_signal(signal.SIGTERM)
        jvm.wait(60)
    started = [read_jsonl(run_dir / "events" / f"{n}.jsonl")[0]["ts_ms"] for n in names]
    # the k-th to start did not start before start_after_s + k spacings (a Java member's first start, its client's
    # classes loading, may hold the next ones until it is done: the order is not asserted, the spacing is)
    assert all(at - launched >= 1000 + 500 * k for k, at in enumerate(sorted(started))), (launched, started)


def test_a_consumer_protocol_member_crashes_at_once_with_its_network_thread_stopped(kafka_libs, jar, tmp_path,
                                                                                   silent_broker):
    """The KIP-848 client's close waits for its leave event without a time-out once its network thread is stopped:
    the crash cuts that wait short (Crash.closeInterrupted), and the member starts again under its name."""
    names = ["member-1", "member-2"]
    run_dir, jvm = start_host(tmp_path, kafka_libs, jar, silent_broker, "consumer", names)
    try:
        wait_for(lambda: all(kinds(run_dir, n) == ["started"] for n in names), 30, "every member started")
        asked = time.monotonic()
        write_atomically(host_control_path(run_dir, "host-1"), {"crashed": ["member-2"]})
        wait_for(lambda: (acked(run_dir) or {}).get("crashed") == ["member-2"], 10, "the crash acked")
        assert time.monotonic() - asked < 3
        assert "member-2: crashed: network thread stopped" in (tmp_path / "host.log").read_text()
        write_atomically(host_control_path(run_dir, "host-1"), {"crashed": []})
        wait_for(lambda: kinds(run_dir, "member-2") == ["started", "started"], 20, "member-2 started again")
        assert acked(run_dir) == {"crashed": [], "down_at_ms": {}, "stopped": [], "running": names}
    finally:
        jvm.kill()  # a clean close waits 30 s for the silent broker's answer to its leave
        jvm.wait(30)


def test_a_host_whose_harness_is_gone_stops_its_members(kafka_libs, jar, tmp_path, silent_broker):
    """Re-parented (the process that started it died without stopping it), a host stops cleanly by itself, as
    workloads/config.py on_harness_exit does for the Python workloads."""
    run_dir = tmp_path / "run"
    cfg = HostConfig(host="host-1", run_dir=str(run_dir), members=[
        member("member-1", run_dir=str(run_dir), release=ClientRelease(classpath=kafka_libs),
               bootstrap_servers=silent_broker, host="host-1")])
    argv = " ".join(f"'{a}'" for a in java_host.command_line(cfg, jar))
    # a parent that starts the host, then dies once the host has started (without a signal to it)
    parent = subprocess.Popen(["sh", "-c", f"{argv} >{tmp_path}/host.log 2>&1 & echo $!; sleep 4"],
                              env={**os.environ, **encode(cfg)}, stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    try:
        wait_for(lambda: kinds(run_dir, "member-1") == ["started"], 30, "the member started")
        parent.wait(10)
        wait_for(lambda: kinds(run_dir, "member-1") == ["started", "stopped"], 20, "the member stopped by itself")
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text(),
                 10, "the host exited")
    finally:
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
