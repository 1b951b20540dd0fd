"""A class-data archive of the classes a Spark analysis loads: the JDK's AOT cache from JDK 25 on (classes loaded and
linked, method profiles), its dynamic AppCDS archive before (analysis/engine/spark.py picks the JVM).

A cold `kafka-chaos analyze` (and the analysis at the end of every `kafka-chaos run`) spends most of its time
starting a JVM and loading Spark's classes. Started with this archive, the driver JVM maps them instead:
a 100k-record run is analysed in about 10 s instead of 16 (docs/benchmarks-history.md). `make setup` builds it once
(`python -m analysis.jvm_archive`, under a minute) by analysing a small run (analysis/engine/synthetic.py) in a JVM that
writes the archive when it exits. It is named after the JVM and the Spark jars it was built with, so an upgrade of either builds a new
one; a JVM that finds no usable archive starts as it always did, silently.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from analysis.engine.spark import CACHE, DUMP_ENV, archive_path, java_options  # noqa: F401  (where the JVM looks for it)


def build(force: bool = False) -> Path | None:
    """Build the archive in a child process, unless it exists. Returns its path (None without a JVM)."""
    path = archive_path()
    if path is None or (path.is_file() and not force):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    subprocess.run([sys.executable, "-m", "analysis.jvm_archive", "--train"], check=True,
                   env={**os.environ, DUMP_ENV: str(partial)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.replace(partial, path)
    for stale in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*"):  # this venv's, for an earlier JVM or Spark
        if stale != path and stale.suffix in (".jsa", ".aot"):
            stale.unlink(missing_ok=True)
    return path


def _train_and_exit(dump_to: Path) -> None:
    """In the child: analyse a small run (both formats: analysis/engine/synthetic.py) so that the JVM loads what a real
    analysis loads, then end the JVM and wait for it: it writes the archive as it exits."""
    from pyspark import SparkContext

    from analysis.job import analyze
    from analysis.engine.spark import get_session, stop_session
    from analysis.engine.synthetic import write_run
    spark = get_session()
    jvm = SparkContext._gateway.proc
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp), jsonl_members=("a",))
        analyze(run, spark=spark)
    stop_session()
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes, writing the archive first
    jvm.wait(timeout=300)
    if not dump_to.is_file():
        raise SystemExit(f"the JVM wrote no class-data archive at {dump_to}")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--train"]:
        _train_and_exit(Path(os.environ[DUMP_ENV]))
        return 0
    path = archive_path()
    if path is None:
        print("no JVM found: nothing to build")
        return 0
    existed = path.is_file() and "--force" not in args
    try:
        build(force="--force" in args)
    except subprocess.CalledProcessError as exc:
        print(f"could not build the class-data archive: {exc.stderr.decode(errors='replace').strip()[-2000:]}",
              file=sys.stderr)
        return 1
    print(f"{'present' if existed else 'built'}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
