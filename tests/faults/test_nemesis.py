"""The nemesis' schedule and final heal, on faults that only record what happened to them."""
import time

from faults import nemesis as nemesis_module
from faults.base import Fault
from faults.nemesis import Nemesis, Step
from kafkanet.waiting import wait_until


class Recorded(Fault):
    def __init__(self, inject_s=0.0, heal_failures=0):
        super().__init__("thing")
        self.inject_s, self.heal_failures = inject_s, heal_failures
        self.injected_at = self.healed_at = None

    def _inject(self):
        time.sleep(self.inject_s)
        self.injected_at = time.monotonic()

    def _heal(self):
        if self.heal_failures:
            self.heal_failures -= 1
            raise RuntimeError("engine busy")
        self.healed_at = time.monotonic()


def run_until_finished(nemesis, timeout_s=10):
    nemesis.start()
    wait_until(lambda: nemesis.finished, timeout_s, interval_s=0.02)
    nemesis.heal_all()


def test_heal_is_due_duration_after_the_inject_finished():
    fault = Recorded(inject_s=0.6)
    run_until_finished(Nemesis([Step(0, 0.3, lambda: fault, "slow inject")], log=lambda m: None))
    assert fault.healed_at - fault.injected_at >= 0.3


def test_a_failing_heal_is_retried(monkeypatch):
    monkeypatch.setattr(nemesis_module, "HEAL_RETRY_S", 0.01)
    fault = Recorded(heal_failures=2)
    nemesis = Nemesis([Step(0, 0.05, lambda: fault, "flaky heal")], log=lambda m: None)
    run_until_finished(nemesis)
    assert not fault.active and nemesis.errors == []


def test_a_heal_that_keeps_failing_is_an_error_and_stays_unhealed(monkeypatch):
    monkeypatch.setattr(nemesis_module, "HEAL_RETRY_S", 0.01)
    fault = Recorded(heal_failures=100)
    nemesis = Nemesis([Step(0, 0.05, lambda: fault, "broken heal")], log=lambda m: None)
    run_until_finished(nemesis)
    assert fault.active and fault.record["healed_at_ms"] is None
    assert len(nemesis.errors) == 1 and "heal failed 3 times" in nemesis.errors[0]


class SlowHeal(Recorded):
    """A heal that waits, as a broker restart's waits for the broker to rejoin."""

    def _heal(self):
        time.sleep(1.0)
        super()._heal()


def test_a_heal_that_waits_holds_up_no_other_fault():
    """The second fault is injected and healed on time while the first one's heal still waits: before, its heal
    came only after the first's (a partition meant for 2 s lasted as long as a broker took to rejoin)."""
    slow, quick = SlowHeal(), Recorded()
    nemesis = Nemesis([Step(0, 0.05, lambda: slow, "restart"), Step(0.2, 0.1, lambda: quick, "cut")], log=lambda m: None)
    run_until_finished(nemesis)
    assert quick.healed_at - quick.injected_at < 0.6 and quick.healed_at < slow.healed_at
    assert not slow.active and not quick.active and nemesis.errors == []


def test_the_schedule_is_finished_only_once_every_heal_beside_it_is_done():
    slow = SlowHeal()
    nemesis = Nemesis([Step(0, 0.05, lambda: slow, "restart")], log=lambda m: None).start()
    time.sleep(0.5)
    assert not nemesis.finished and slow.active
    wait_until(lambda: nemesis.finished, 10, interval_s=0.02)
    assert not slow.active
