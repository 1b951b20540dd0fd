"""The one error the analysis raises for bad input."""
from __future__ import annotations


class InputError(Exception):
    """The run directory does not follow contract v1 (DESIGN.md).

    The message is one line that names the file (relative to the run directory) and, where there is
    one, the column and the line or row: ``consumed/m1.jsonl:17: column 'offset' has "abc" (a string), expected int64``.
    """
