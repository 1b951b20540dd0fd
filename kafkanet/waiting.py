"""One way to wait: poll a condition until it holds or a deadline passes, never a fixed sleep.

A condition that raises counts as "not yet" (a request times out while a fault is active; NotYet says why in
words); the last such error goes into the message of a wait that never holds, with whatever detail the caller
adds (a log tail). An error of a type the caller calls fatal ends the wait at once (a container that exited).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

POLL_S = 0.2  # each poll is a request or two on the control lane, or a look at a process
T = TypeVar("T")


class WaitTimeout(Exception):
    """A condition that did not hold within its time; the message names what was awaited and the last error."""


class NotYet(Exception):
    """Raised by a condition to say why it does not hold yet (e.g. "2 of 3 brokers registered")."""


def wait_until(condition: Callable[[], object], timeout_s: float, *, interval_s: float = POLL_S,
               on_error: Callable[[Exception], None] | None = None,
               on_tick: Callable[[], None] | None = None, tick_every_s: float = 5.0,
               fatal: tuple[type[Exception], ...] = ()) -> bool:
    """True as soon as condition() is truthy, False once timeout_s has passed without it.

    on_error is called with an exception whose message differs from the previous one (say it once, not every
    poll); on_tick after the first poll that does not hold, then at most every tick_every_s (progress on a
    long wait)."""
    poll = _Poll(condition, bool, interval_s, fatal, on_error, on_tick, tick_every_s)
    return poll.until(time.monotonic() + timeout_s)


def require(condition: Callable[[], T], timeout_s: float, what: str, *, error: type[Exception] = WaitTimeout,
            detail: Callable[[], str] | None = None, interval_s: float = POLL_S,
            fatal: tuple[type[Exception], ...] = ()) -> T:
    """The first truthy value of condition(); or `error` saying "<what> within <timeout_s> s (<last error>)",
    then the caller's detail. `what` reads as the failure: "broker-2 did not come back"."""
    return _insist(_Poll(condition, bool, interval_s, fatal), timeout_s, what, error, detail)


def retry(call: Callable[[], T], timeout_s: float, what: str, *, error: type[Exception] = WaitTimeout,
          detail: Callable[[], str] | None = None, interval_s: float = POLL_S,
          fatal: tuple[type[Exception], ...] = ()) -> T:
    """call()'s value as soon as it returns instead of raising, whatever the value (a node id 0 counts); or
    `error` as require() gives it."""
    return _insist(_Poll(call, lambda _: True, interval_s, fatal), timeout_s, what, error, detail)


def _insist(poll: _Poll[T], timeout_s: float, what: str, error: type[Exception],
            detail: Callable[[], str] | None) -> T:
    if poll.until(time.monotonic() + timeout_s):
        return poll.value  # type: ignore[return-value]  # set by the poll that held
    tail = f"\n{detail()}" if detail is not None else ""
    raise error(f"{what} within {timeout_s:.0f} s ({poll.last or 'never true'}){tail}")


class _Poll(Generic[T]):
    def __init__(self, condition: Callable[[], T], holds: Callable[[object], bool], interval_s: float,
                 fatal: tuple[type[Exception], ...], on_error: Callable[[Exception], None] | None = None,
                 on_tick: Callable[[], None] | None = None, tick_every_s: float = 0.0) -> None:
        self.condition, self.holds, self.interval_s, self.fatal = condition, holds, interval_s, fatal
        self.on_error, self.on_tick, self.tick_every_s = on_error, on_tick, tick_every_s
        self.last: str | None = None
        self.value: T | None = None

    def until(self, deadline: float) -> bool:
        last_tick = None
        while True:
            if self._poll():
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if self.on_tick is not None and (last_tick is None or now - last_tick >= self.tick_every_s):
                last_tick = now
                self.on_tick()
            time.sleep(min(self.interval_s, max(0.0, deadline - now)))

    def _poll(self) -> bool:
        try:
            self.value = self.condition()
        except self.fatal:
            raise
        except Exception as exc:  # not yet: say so once per distinct error
            if str(exc) != self.last and self.on_error is not None:
                self.on_error(exc)
            self.last = str(exc)
            return False
        return self.holds(self.value)
