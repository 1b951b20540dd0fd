"""kafkanet.waiting, the one polling helper, and kafkanet.clock, the one clock: pure, no cluster."""
import time

import pytest

from kafkanet.clock import now_ms
from kafkanet.waiting import NotYet, WaitTimeout, require, retry, wait_until

FAST = 0.001  # seconds between polls: these tests wait for counters, not for Kafka


class Countdown:
    """A condition that does not hold for its first `misses` polls (each one raising `error`, if given)."""

    def __init__(self, misses: int, value: object = "ready", error: Exception | None = None) -> None:
        self.misses, self.value, self.error, self.polls = misses, value, error, 0

    def __call__(self) -> object:
        self.polls += 1
        if self.polls <= self.misses:
            if self.error is not None:
                raise self.error
            return None
        return self.value


def test_wait_until_polls_until_the_condition_holds():
    condition = Countdown(3)
    assert wait_until(condition, 5, interval_s=FAST) is True
    assert condition.polls == 4


def test_wait_until_gives_false_when_the_time_runs_out():
    assert wait_until(lambda: False, 0.02, interval_s=FAST) is False


def test_an_exception_is_not_yet_and_said_once_per_distinct_message():
    said = []
    condition = Countdown(3, error=TimeoutError("request timed out"))
    assert wait_until(condition, 5, interval_s=FAST, on_error=said.append)
    assert [str(e) for e in said] == ["request timed out"]


def test_on_tick_comes_after_the_first_miss_then_at_most_every_tick_every_s():
    ticks = []
    assert wait_until(Countdown(5), 5, interval_s=FAST, on_tick=lambda: ticks.append(1), tick_every_s=60)
    assert ticks == [1]


def test_require_gives_the_value_that_held():
    assert require(Countdown(2, value={"leader": 3}), 5, "no leader", interval_s=FAST) == {"leader": 3}


def test_require_names_what_the_time_and_the_last_reason_with_the_callers_error_and_detail():
    class ClusterError(Exception):
        pass

    def two_of_three():
        raise NotYet("2 of 3 brokers registered")

    with pytest.raises(ClusterError) as raised:
        require(two_of_three, 0.02, "the cluster was not ready", error=ClusterError, detail=lambda: "--- broker-1 log",
                interval_s=FAST)
    assert str(raised.value) == "the cluster was not ready within 0 s (2 of 3 brokers registered)\n--- broker-1 log"


def test_require_without_an_error_says_never_true():
    with pytest.raises(WaitTimeout, match=r"^drain within 0 s \(never true\)$"):
        require(lambda: 0, 0.02, "drain", interval_s=FAST)


def test_a_fatal_error_ends_the_wait_at_once():
    class Exited(Exception):
        pass

    condition = Countdown(100, error=Exited("broker-2 exited during start-up"))
    with pytest.raises(Exited, match="broker-2 exited"):
        require(condition, 60, "the cluster was not ready", fatal=(Exited,), interval_s=FAST)
    assert condition.polls == 1


def test_retry_takes_any_value_a_call_returns_without_raising_even_a_falsy_one():
    call = Countdown(2, value=0, error=OSError("no broker told who leads the quorum"))
    assert retry(call, 5, "no quorum leader", interval_s=FAST) == 0
    assert call.polls == 3


def test_retry_raises_the_callers_error_with_the_last_one():
    class QuorumError(RuntimeError):
        pass

    def refused():
        raise OSError("connection refused")

    with pytest.raises(QuorumError, match=r"^no quorum leader within 0 s \(connection refused\)$"):
        retry(refused, 0.02, "no quorum leader", error=QuorumError, interval_s=FAST)


def test_the_clock_is_wall_clock_epoch_milliseconds():
    before = int(time.time() * 1000)
    stamp = now_ms()
    assert isinstance(stamp, int) and before <= stamp <= int(time.time() * 1000)
