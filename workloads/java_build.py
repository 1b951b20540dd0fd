"""Builds the Java member program (workloads/java, a Maven project) once per version of its sources.

The jar is cached under $XDG_CACHE_HOME/kafka-chaos/java-member/<hash of the pom and sources>/kafka-chaos-member.jar
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
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "java"
JAR_NAME = "kafka-chaos-member.jar"
BUILD_TIMEOUT_S = 600


class JavaBuildError(RuntimeError):
    """Maven could not build the member program (its output's tail says why)."""


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-chaos" / "java-member"


def source_files(sources: Path = SOURCES) -> list[Path]:
    """What the build reads: the pom and everything under src/ (not a target/ left by a manual build)."""
    return [sources / "pom.xml", *sorted(p for p in (sources / "src").rglob("*") if p.is_file())]


def sources_hash(sources: Path = SOURCES) -> str:
    digest = hashlib.sha256()
    for path in source_files(sources):
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def member_jar(sources: Path = SOURCES, cache: Path | None = None) -> Path:
    """The jar of the current sources, built with Maven on first use (tens of seconds; then a hash of a few files)."""
    home = (cache or cache_root()) / sources_hash(sources)
    jar = home / JAR_NAME
    if jar.is_file():
        return jar
    partial = home.with_name(f"{home.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _build(sources, partial)
        try:
            partial.rename(home)
        except OSError:
            if not jar.is_file():  # not another build that finished first: a real failure
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return jar


def _build(sources: Path, into: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaBuildError("Maven (mvn) is not on PATH: `make setup` installs it (Debian's maven package)")
    into.mkdir(parents=True)
    build_dir = into / "build"
    command = [mvn, "-B", "-q", "-f", str(sources / "pom.xml"), f"-DbuildDirectory={build_dir}", "package"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise JavaBuildError(f"Maven did not build {sources} within {BUILD_TIMEOUT_S} s") from exc
    built = build_dir / JAR_NAME
    if done.returncode != 0 or not built.is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise JavaBuildError(f"Maven failed to build {sources} (exit {done.returncode}):\n{tail}")
    built.rename(into / JAR_NAME)
    shutil.rmtree(build_dir)


if __name__ == "__main__":
    try:
        print(member_jar())
    except JavaBuildError as exc:
        sys.exit(str(exc))
