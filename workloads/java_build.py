"""Builds the Java member program (workloads/java, a Maven project) once per version of its sources.

The jar is cached under $XDG_CACHE_HOME/kafka-chaos/java-member/<hash of the pom and sources, and of the contract
library's>/kafka-chaos-member.jar
(~/.cache when XDG_CACHE_HOME is unset): a changed source gets a new folder, an unchanged tree builds nothing. A build
goes into a folder of its own and is renamed into place whole, so a build that fails or is killed leaves nothing that
looks built, and two builds at once both end with one good jar.

kafka-clients and jackson-databind are `provided`: at run time they come from the Kafka image's libs/
(workloads/java_host.py puts both on the classpath). Maven reaches its registry as ~/.m2/settings.xml says.

    python -m workloads.java_build    # builds if needed, prints the jar's path
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "java"
CONTRACT = Path(__file__).resolve().parent / "java-contract"  # org.kafka-chaos:kafka-chaos-contract:1
JAR_NAME = "kafka-chaos-member.jar"
STREAMS_SOURCES = Path(__file__).resolve().parent / "streams"  # the Kafka Streams member program (issue 55)
STREAMS_JAR = "kafka-chaos-streams.jar"
CONTRACT_JAR = "kafka-chaos-contract.jar"
BUILD_TIMEOUT_S = 600


class JavaBuildError(RuntimeError):
    """Maven could not build the member program (its output's tail says why)."""


def cache_root(kind: str = "java-member") -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-chaos" / kind


def source_files(sources: Path = SOURCES) -> list[Path]:
    """What the build reads: the pom and everything under src/ (not a target/ left by a manual build)."""
    return [sources / "pom.xml", *sorted(p for p in (sources / "src").rglob("*") if p.is_file())]


def sources_hash(sources: Path = SOURCES) -> str:
    digest = hashlib.sha256()
    for path in source_files(sources):
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


REPOSITORY_ENV = "KAFKA_CHAOS_MAVEN_REPO"  # another local Maven repository; every build here is then run with it


def local_repository() -> Path:
    """Maven's local repository (its default, unless KAFKA_CHAOS_MAVEN_REPO names another)."""
    return Path(os.environ.get(REPOSITORY_ENV) or Path.home() / ".m2" / "repository")


def installed_contract(contract: Path = CONTRACT) -> Path:
    """The contract library installed in the local Maven repository, built and installed when its sources changed (a
    marker beside it holds the hash of the sources it was built from). A program's pom names it as
    org.kafka-chaos:kafka-chaos-contract:1 (examples/java/pom.xml); the member program shades it in."""
    home = local_repository() / "org" / "kafka-chaos" / "kafka-chaos-contract" / "1"
    jar, marker, wanted = home / "kafka-chaos-contract-1.jar", home / "kafka-chaos-sources", sources_hash(contract)
    if jar.is_file() and marker.is_file() and marker.read_text() == wanted:
        return jar
    build = Path(tempfile.mkdtemp(prefix="kafka-chaos-contract-"))
    try:
        _maven(contract, build, "install", CONTRACT_JAR)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    marker.write_text(wanted)
    return jar


def build_key(sources: Path = SOURCES) -> str:
    """The cache folder of a build: the member program's sources and the contract library's."""
    return f"{sources_hash(sources)}-{sources_hash(CONTRACT)[:8]}"


def member_jar(sources: Path = SOURCES, cache: Path | None = None) -> Path:
    """The jar of the current sources, built with Maven on first use (tens of seconds; then a hash of a few files);
    the contract library it shades in is installed first."""
    return project_jar(sources, cache or cache_root(), JAR_NAME)


def streams_jar(cache: Path | None = None) -> Path:
    """The Kafka Streams member program's jar (everything it runs shaded in), built on first use like member_jar()."""
    return project_jar(STREAMS_SOURCES, cache or cache_root("streams-member"), STREAMS_JAR)


def project_jar(sources: Path, cache: Path, jar_name: str) -> Path:
    """The jar `jar_name` of a Maven project that uses the contract library (the member program, a program of yours:
    workloads/java_app.py), built on first use and cached by the hash of its sources and the library's."""
    home = cache / build_key(sources)
    jar = home / jar_name
    if jar.is_file():
        return jar
    installed_contract()
    partial = home.with_name(f"{home.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _build(sources, partial, jar_name)
        try:
            partial.rename(home)
        except OSError:
            if not jar.is_file():  # not another build that finished first: a real failure
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return jar


def _build(sources: Path, into: Path, jar_name: str = JAR_NAME) -> None:
    into.mkdir(parents=True)
    build_dir = into / "build"
    _maven(sources, build_dir, "package", jar_name).rename(into / jar_name)
    shutil.rmtree(build_dir)


def _maven(sources: Path, build_dir: Path, goal: str, jar_name: str) -> Path:
    """`mvn <goal>` of one project, built in `build_dir`; the jar it made (JavaBuildError with Maven's last lines)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaBuildError("Maven (mvn) is not on PATH: `make setup` installs it (Debian's maven package)")
    command = [mvn, "-B", "-q", "-f", str(sources / "pom.xml"), f"-DbuildDirectory={build_dir}", goal]
    if os.environ.get(REPOSITORY_ENV):  # the repository installed_contract() looks in is the one Maven installs to
        command.insert(1, f"-Dmaven.repo.local={local_repository()}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise JavaBuildError(f"Maven did not build {sources} within {BUILD_TIMEOUT_S} s") from exc
    built = build_dir / jar_name
    if done.returncode != 0 or not built.is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise JavaBuildError(f"Maven failed to build {sources} (exit {done.returncode}):\n{tail}")
    return built


if __name__ == "__main__":
    try:
        print(member_jar())
        print(streams_jar())
    except JavaBuildError as exc:
        sys.exit(str(exc))
