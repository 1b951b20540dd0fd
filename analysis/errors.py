"""The one error the analysis raises for bad input."""
from __future__ import annotations


class InputError(Exception):
    """The run directory does not follow contract v1 (DESIGN.md).

    The message is one line that names the file (relative to the run directory) and, where there is
    one, the column and the line or row: ``consumed/m1.jsonl:17: column 'offset' has "abc" (a string), expected int64``.
    """


class AnalysisFailed(RuntimeError):
    """The analysis stopped on an error that is not bad input: one line naming the step it was at and the log that
    holds the details (the traceback, and what Spark and the JVM printed). The run directory is left as it was, to be
    analysed again."""

    def __init__(self, step: str, error: str, log):
        super().__init__(f"the analysis failed at {step!r}: {error}; details in {log}")
        self.step, self.error, self.log = step, error, log
