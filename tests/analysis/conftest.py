"""Analysis tests: real PySpark, one warm session for the whole pytest session."""
import sys
from pathlib import Path

import pytest

# This folder is named like the package it tests. Under plain `pytest` (not `python -m pytest`) tests/ is put
# on sys.path first and tests/analysis/ would shadow the real package as a namespace package; the repository
# root goes first instead (it also makes benchmarks/ importable).
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
if "analysis" in sys.modules and getattr(sys.modules["analysis"], "__file__", None) is None:
    del sys.modules["analysis"]
import analysis  # noqa: E402,F401  the real one, from now on


@pytest.fixture
def spark():
    """The warm local session. Asked for per test (cheap once started): a test that switches to another
    target (test_analysis_spark_targets.py) stops the local session, and get_session builds a new one."""
    from analysis.engine.spark import get_session
    return get_session()


@pytest.fixture(params=["jsonl", "parquet"])
def fmt(request):
    return request.param


@pytest.fixture
def service_env(tmp_path, monkeypatch):
    """The analysis service on, in a folder of this test (its socket is short enough for AF_UNIX); stopped at the
    end. The environment to run a CLI with."""
    import os
    import shutil

    from analysis import service
    from kafkanet.waiting import wait_until
    folder = Path(f"/tmp/kc-svc-{os.getpid()}-{tmp_path.name[-12:]}")
    monkeypatch.setenv(service.ENV, "1")
    monkeypatch.setenv(service.DIR_ENV, str(folder))
    yield {**os.environ, "PYTHONPATH": str(ROOT)}
    service.stop()
    wait_until(lambda: not service.running(), 30)
    assert not service.running()
    shutil.rmtree(folder, ignore_errors=True)
