"""A seeded random fault schedule, like Jepsen's nemesis generator: the same seed, the same schedule.

Faults come one after another: each picks an entry of the menu, a duration and then a quiet gap, all
from one `random.Random(seed)`. A `random` or `random-member` target is drawn here too, so the
schedule names concrete targets and replays exactly; roles such as `coordinator` stay roles, since
what they mean is decided by the cluster when the fault fires.
"""
from __future__ import annotations

import random

RANDOM_TARGETS = {"random": "brokers", "random-member": "members"}
MAX_FAULTS = 10_000


class ScheduleTooLong(ValueError):
    """More than MAX_FAULTS faults before until_s: a schedule nobody meant (or one that would never end)."""


def random_schedule(menu: list[dict], *, seed: int, start_s: float, until_s: float,
                    interval_s: tuple[float, float], duration_s: tuple[float, float],
                    brokers: list[str], members: list[str]) -> list[dict]:
    """Fault entries (kind, target, at_s, duration_s and the kind's parameters), in time order."""
    rng = random.Random(seed)
    pools = {"brokers": sorted(brokers), "members": sorted(members)}
    schedule: list[dict] = []
    t = start_s
    while t < until_s:
        if len(schedule) == MAX_FAULTS:
            raise ScheduleTooLong(f"more than {MAX_FAULTS} faults would start before {until_s:g} s "
                                  f"(the {MAX_FAULTS}th at {t:g} s)")
        entry = dict(rng.choice(menu))
        if entry.get("target") in RANDOM_TARGETS:
            entry["target"] = rng.choice(pools[RANDOM_TARGETS[entry["target"]]])
        duration = round(rng.uniform(*duration_s), 1)
        schedule.append({**entry, "at_s": round(t, 1), "duration_s": duration})
        t += duration + round(rng.uniform(*interval_s), 1)
    return schedule
