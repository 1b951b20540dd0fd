"""Clients pinned to a release, so a bug can be shown on the version that had it and gone on the fix.

- librdkafka members: a `confluent-kafka` release from PyPI, installed once into its own virtual
  environment (~/.cache/kafka-chaos/clients/confluent-kafka-X), wheels only: a release without a
  wheel for this Python cannot be built here. The member runs with that environment's interpreter
  and the project on PYTHONPATH (workloads/ needs nothing beyond the standard library and the client).
- Java members: Apache Kafka's VerifiableConsumer and the kafka-clients of that release, resolved
  from Maven Central (images/java-client/pom.xml) into ~/.cache/kafka-chaos/clients/java-X.
  The tool's options changed across releases (`--broker-list` became `--bootstrap-server` in 2.6,
  `--group-instance-id` came in 2.3, required until 2.5 (`None` for a dynamic member), `--consumer.config` became `--command-config`, and `--group-protocol`
  came with KIP-848), so its `--help` is read once and kept beside the jars.

Kafka 4 brokers removed the protocol versions that clients older than 2.1 (Java) need (KIP-896);
such versions are refused before anything starts.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workloads.config import ClientRelease
from workloads.kinds import member_kind

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-chaos" / "clients"
JAVA_POM = ROOT / "images" / "java-client" / "pom.xml"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
OLDEST_JAVA = (2, 1)        # KIP-896: Kafka 4.0 accepts Java clients from 2.1 on
OLDEST_CONFLUENT = (2, 0, 2)  # the first confluent-kafka with a wheel for Python 3.11
INSTALL_TIMEOUT_S = 600


class ClientVersionError(ValueError):
    """A pinned version that cannot run here; the message says why."""


def version_tuple(version: str) -> tuple[int, ...]:
    if not re.fullmatch(r"\d+(\.\d+){1,3}", version):
        raise ClientVersionError(f"{version!r} is not a release number such as 3.2.0")
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class LibrdkafkaClient:
    version: str            # confluent-kafka
    librdkafka_version: str
    python: str             # the interpreter whose environment has that release


@dataclass(frozen=True)
class JavaClient:
    version: str
    classpath: str
    options: frozenset[str]  # VerifiableConsumer's command-line options in this release

    @property
    def config_option(self) -> str:
        return "--command-config" if "--command-config" in self.options else "--consumer.config"

    @property
    def has_group_protocol(self) -> bool:
        return "--group-protocol" in self.options

    @property
    def bootstrap_option(self) -> str:
        """KIP-499 (2.6) renamed --broker-list to --bootstrap-server."""
        return "--bootstrap-server" if "--bootstrap-server" in self.options else "--broker-list"

    @property
    def has_group_instance_id(self) -> bool:
        """Static membership (KIP-345) came to VerifiableConsumer in 2.3."""
        return "--group-instance-id" in self.options

    @property
    def dynamic_instance_id(self) -> str | None:
        """In 2.3 and 2.4 --group-instance-id is required, and "None" makes a dynamic member (fixed in 2.5)."""
        return "None" if (2, 3) <= version_tuple(self.version)[:2] < (2, 5) else None


def check_librdkafka_version(version: str) -> None:
    if version_tuple(version) < OLDEST_CONFLUENT:
        raise ClientVersionError(
            f"confluent-kafka {version} has no wheel for Python {sys.version_info.major}.{sys.version_info.minor} "
            f"(wheels from {'.'.join(map(str, OLDEST_CONFLUENT))} on), and a source build needs librdkafka's headers")


def check_java_version(version: str) -> None:
    if version_tuple(version)[:2] < OLDEST_JAVA:
        raise ClientVersionError(
            f"Java client {version} is older than 2.1, the oldest release Kafka 4 brokers accept (KIP-896 "
            "removed the older protocol versions)")


def librdkafka_client(version: str, log=print, offline: bool = False) -> LibrdkafkaClient | None:
    """The confluent-kafka release `version`, installed on first use and cached (offline: None when not cached)."""
    check_librdkafka_version(version)
    home = CACHE / f"confluent-kafka-{version}"
    facts = _cached(home, f"installing confluent-kafka {version}", lambda partial: _install_confluent(version, partial), log,
                    offline)
    return facts and LibrdkafkaClient(version, facts["librdkafka_version"], str(home / "bin" / "python"))


def _install_confluent(version: str, partial: Path) -> dict:
    _run([sys.executable, "-m", "venv", str(partial)], f"venv for confluent-kafka {version}")
    _run([str(partial / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          "--only-binary", ":all:", f"confluent-kafka=={version}"], f"confluent-kafka {version}")
    librdkafka = _run([str(partial / "bin" / "python"), "-c", "import confluent_kafka; print(confluent_kafka.libversion()[0])"],
                      f"confluent-kafka {version}").strip()
    return {"version": version, "librdkafka_version": librdkafka}


def java_client(version: str, log=print, offline: bool = False) -> JavaClient | None:
    """Kafka `version`'s kafka-clients and VerifiableConsumer from Maven Central, resolved once and cached
    (offline: None when not cached)."""
    check_java_version(version)
    home = CACHE / f"java-{version}"
    facts = _cached(home, f"resolving kafka-tools {version} with Maven", lambda partial: _resolve_java(version, partial), log,
                    offline)
    return facts and JavaClient(version, str(home / "libs" / "*"), frozenset(facts["options"]))


def _resolve_java(version: str, partial: Path) -> dict:
    partial.mkdir(parents=True)
    shutil.copy(JAVA_POM, partial / "pom.xml")
    _run(["mvn", "-B", "-q", "-f", str(partial / "pom.xml"), f"-Dkafka.version={version}",
          "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={partial / 'libs'}"],
         f"kafka-tools {version} from Maven Central")
    usage = subprocess.run(["java", "-cp", str(partial / "libs" / "*"), VERIFIABLE_CONSUMER, "--help"],
                           capture_output=True, text=True, timeout=60)
    options = sorted(set(re.findall(r"(?<![\w-])(--[a-z][\w.-]*)", usage.stdout + usage.stderr)))
    if "--group-id" not in options:
        raise ClientVersionError(f"kafka-tools {version} has no usable VerifiableConsumer:\n{usage.stderr[-500:]}")
    return {"version": version, "options": options}


def _cached(home: Path, what: str, build, log, offline: bool = False) -> dict | None:
    """The facts of a client built once into `home`: build(partial) fills HOME.partial and returns its facts,
    which are kept beside it; HOME.partial is then renamed to HOME, so nothing half-built is ever used
    (venv scripts name the partial path; `bin/python -m ...` does not care). Offline: None when not built yet."""
    facts = home / "kafka-chaos-client.json"
    if not facts.exists() and offline:
        return None
    if not facts.exists():
        log(f"{what} into {home} (once)")
        with _partial(home) as partial:
            (partial / facts.name).write_text(json.dumps(build(partial)))
            shutil.rmtree(home, ignore_errors=True)
            partial.rename(home)
    return json.loads(facts.read_text())


@contextmanager
def _partial(home: Path):
    """Build into HOME.partial, renamed to HOME when done; nothing half-built is left on failure."""
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        yield partial
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def maven_lacks_release(output: str) -> bool:
    """Did Maven fail because an artifact is not on the repository (first attempt, or a cached miss)?"""
    return "Could not find artifact" in output or "was not found in" in output or "Could not resolve dependencies" in output


def _run(command: list[str], what: str) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise ClientVersionError(f"{what}: {exc.filename} is not installed (`make setup` installs it)") from None
    if result.returncode != 0:
        output = result.stdout + result.stderr
        if "No matching distribution" in output or "Could not find a version" in output:
            raise ClientVersionError(f"{what}: no such release on the package registry (or no wheel for this Python)")
        if maven_lacks_release(output):
            raise ClientVersionError(f"{what}: no such release on Maven Central")
        tail = "\n".join(output.strip().splitlines()[-6:])
        raise ClientVersionError(f"{what} failed:\n{tail}")
    return result.stdout


def member_client(client: str, version: str | None, default_java, log=print, offline: bool = False) -> ClientRelease | None:
    """How a member of `client` at `version` (None: the release the harness ships) runs: its interpreter
    or classpath, and what its release can do. `default_java()` gives the brokers' own (classpath, log4j
    config) for an unpinned Java member. Offline: None for a release not on this machine yet (it would be
    downloaded) and for the brokers' own Java client (it is read from the Kafka image)."""
    if member_kind(client).command:  # a program of the user's brings its own client
        return ClientRelease()
    if member_kind(client).library == "librdkafka":
        if version is None:
            return ClientRelease(python=sys.executable)
        pinned = librdkafka_client(version, log, offline)
        return pinned and ClientRelease(python=pinned.python, client_version=version,
                                        librdkafka_version=pinned.librdkafka_version)
    if version is None:
        if offline:
            return None
        classpath, log4j_config = default_java()
        return ClientRelease(classpath=classpath, log4j_config=str(log4j_config) if log4j_config else None)
    pinned = java_client(version, log, offline)
    if pinned is None:
        return None
    return ClientRelease(classpath=pinned.classpath, config_option=pinned.config_option,
                         group_protocol_option=pinned.has_group_protocol, bootstrap_option=pinned.bootstrap_option,
                         group_instance_id_option=pinned.has_group_instance_id,
                         dynamic_instance_id=pinned.dynamic_instance_id, client_version=version)
