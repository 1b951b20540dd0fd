"""Progress lines on stderr for everything that takes more than a moment."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

_T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[kafka-chaos {time.monotonic() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


@contextmanager
def progress(what: str):
    started = time.monotonic()
    say(f"{what} ...")
    try:
        yield
    except BaseException:
        say(f"{what}: FAILED after {time.monotonic() - started:.1f} s")
        raise
    say(f"{what}: done in {time.monotonic() - started:.1f} s")


def one_line(exc: BaseException) -> str:
    """An error as one line of a table or a message: its type and the first line of its text."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
