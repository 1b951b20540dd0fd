"""The class-data archive that makes a cold analysis start sooner: named per JVM and jars, used when present,
never noisy when it cannot be used; and the JVM a local analysis runs on (the newest JDK >= 25 found, else the
default one)."""
import subprocess
from pathlib import Path

import pytest

from analysis import jvm_archive
from analysis.engine import spark as where  # where the driver JVM finds the archive (jvm_archive only builds it)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(where, "CACHE", tmp_path)
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    return tmp_path


def fake_jdk(folder: Path, version: str) -> Path:
    """A JDK home as the JVM folder holds one: bin/java and a release file."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "java").write_text("#!/bin/sh\n")
    (folder / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return folder


def test_options_use_the_archive_of_each_kind_only_when_it_exists(cache, tmp_path):
    for version, suffix, use, quiet in (("17.0.15", ".jsa", "-XX:SharedArchiveFile", where.QUIET),
                                        ("25.0.3", ".aot", "-XX:AOTCache", where.QUIET_AOT)):
        java = fake_jdk(tmp_path / f"jdk-{version}", version) / "bin" / "java"
        path = jvm_archive.archive_path(java)
        assert path.parent == cache and path.suffix == suffix
        assert jvm_archive.java_options(java) == where.GC
        path.write_bytes(b"archive")
        assert jvm_archive.java_options(java) == f"{where.GC} {use}={path} {quiet}"


def test_the_building_child_writes_the_archive_of_its_kind_at_exit(cache, tmp_path, monkeypatch):
    monkeypatch.setenv(jvm_archive.DUMP_ENV, str(cache / "x.partial"))
    old, new = (fake_jdk(tmp_path / v, v) / "bin" / "java" for v in ("17.0.15", "25.0.3"))
    assert jvm_archive.java_options(old).startswith(f"{where.GC} -XX:ArchiveClassesAtExit={cache / 'x.partial'} ")
    assert jvm_archive.java_options(new).startswith(f"{where.GC} -XX:AOTCacheOutput={cache / 'x.partial'} ")


def test_a_local_session_runs_on_the_newest_jdk_of_25_or_later_else_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv(where.JAVA_ENV, raising=False)
    monkeypatch.setattr(where, "JVM_DIR", tmp_path)
    fake_jdk(tmp_path / "java-17", "17.0.15")
    fake_jdk(tmp_path / "java-8", "1.8.0_412")
    assert where.local_java() == where.default_java()
    assert where.java_major(tmp_path / "java-8" / "bin" / "java") == 8
    fake_jdk(tmp_path / "temurin-25", "25.0.3")
    fake_jdk(tmp_path / "temurin-26", "26")
    assert where.local_java() == (tmp_path / "temurin-26" / "bin" / "java").resolve()
    assert where.driver_java("local[*]") == where.local_java()
    assert where.driver_java("spark://127.0.0.1:7077") == where.default_java()  # a cluster's executors share the default
    monkeypatch.setenv(where.JAVA_ENV, str(tmp_path / "java-17"))
    assert where.local_java() == (tmp_path / "java-17" / "bin" / "java").resolve()


def test_an_unusable_archive_is_silent(tmp_path):
    """A stale or broken archive must not print on stdout, where `analyze --json` writes the summary."""
    (tmp_path / "broken.jsa").write_bytes(b"not an archive")
    (tmp_path / "broken.aot").write_bytes(b"not an archive")
    for java in {where.default_java(), where.local_java()}:
        aot = where.has_aot_cache(java)
        flag, quiet, suffix = ("-XX:AOTCache", where.QUIET_AOT, ".aot") if aot else ("-XX:SharedArchiveFile", where.QUIET, ".jsa")
        for archive in (tmp_path / f"broken{suffix}", tmp_path / f"missing{suffix}"):
            done = subprocess.run([str(java), f"{flag}={archive}", *quiet.split(), "-version"],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0 and done.stdout == "" and "warning" not in done.stderr, done.stderr


@pytest.mark.needs_setup
def test_the_session_driver_runs_on_the_local_jvm_with_the_archive_made_by_setup(spark):
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    java = where.local_java()
    assert int(str(runtime.getSpecVersion()).split(".")[-1]) == where.java_major(java)
    path = jvm_archive.archive_path()
    if not path.is_file():
        pytest.skip("no class-data archive (make setup builds it)")
    flag = "-XX:AOTCache" if path.suffix == ".aot" else "-XX:SharedArchiveFile"
    assert f"{flag}={path}" in list(runtime.getInputArguments())
