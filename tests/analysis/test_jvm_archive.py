"""The class-data archive that makes a cold analysis start sooner: named per JVM and jars, used when present,
never noisy when it cannot be used."""
import subprocess

import pytest

from analysis import jvm_archive
from analysis import spark as where  # where the driver JVM finds the archive (jvm_archive only builds it)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(where, "CACHE", tmp_path)
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    return tmp_path


def test_options_use_the_archive_only_when_it_exists(cache):
    path = jvm_archive.archive_path()
    assert path.parent == cache and path.suffix == ".jsa"
    assert jvm_archive.java_options() == where.GC
    path.write_bytes(b"archive")
    assert jvm_archive.java_options() == f"{where.GC} -XX:SharedArchiveFile={path} {where.QUIET}"


def test_the_building_child_writes_the_archive_at_exit(cache, monkeypatch):
    monkeypatch.setenv(jvm_archive.DUMP_ENV, str(cache / "x.partial"))
    assert jvm_archive.java_options().startswith(f"{where.GC} -XX:ArchiveClassesAtExit={cache / 'x.partial'} ")


def test_an_unusable_archive_is_silent(tmp_path):
    """A stale or broken archive must not print on stdout, where `analyze --json` writes the summary."""
    (tmp_path / "broken.jsa").write_bytes(b"not an archive")
    java = str(where._java())
    for archive in (tmp_path / "broken.jsa", tmp_path / "missing.jsa"):
        done = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", *where.QUIET.split(), "-version"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == "" and "warning" not in done.stderr, done.stderr


def test_the_session_driver_runs_with_the_archive_made_by_setup(spark):
    path = jvm_archive.archive_path()
    if not path.is_file():
        pytest.skip("no class-data archive (make setup builds it)")
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={path}" in args
