"""kafka-chaos analysis: the checker (Jepsen's split). PySpark job over one run directory (contract v1).

The whole public API is analysis/api.py (what the harness may call). For a script, the two calls most wanted are
here too, without loading Spark until they run:
    analyze(run_dir, *, spark=None, master=None, remote=None, grace_ms=30000, ...) -> summary dict
    compare(run_dirs, ...) -> table of figures across runs
    InputError                 bad input; the message names the file and the column
    AnalysisFailed             any other failure: one line naming the step and report/analysis.log

This package imports nothing from harness/, faults/ or workloads/: its only input is a run directory.
"""
from analysis.errors import AnalysisFailed, InputError


def analyze(run_dir, **kwargs):
    from analysis.job import analyze as _analyze
    return _analyze(run_dir, **kwargs)


analyze.__doc__ = "See analysis.job.analyze."


def compare(run_dirs, **kwargs):
    from analysis.job import compare as _compare
    return _compare(run_dirs, **kwargs)


__all__ = ["analyze", "compare", "AnalysisFailed", "InputError"]
