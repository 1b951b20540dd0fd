"""The `member_fatal` check: members that ended on a fatal client error the scenario did not expect."""
from __future__ import annotations

from typing import NamedTuple

from analysis.checks.framework import CheckResult, Facts, check
from analysis.rundir.history import OPEN, History


ANY_MEMBER = "any"


def fatal_ends(h: History) -> list:
    """The events on which a member ended on a client error it could not go on after: an ``error`` marked
    ``fatal``, ``fenced`` (always an end; run directories written before ``fatal`` existed carry no flag), and a
    ``crashed`` the harness logged: a death by a signal it did not send (an abort in the client), or a command
    member's program that exited on its own (its ``exit_code``, no signal)."""
    return [e for e in h.events if (e.kind in ("fenced", "error") and e.facts.get("fatal", e.kind == "fenced") is True)
            or (e.kind == "crashed" and (e.facts.get("signal") or e.facts.get("exit_code") is not None))]


def _error_of(e) -> str:
    """What a fatal end is called: the Kafka error, the signal, a program's exit code, else its detail's first word."""
    if e.facts.get("error") or e.facts.get("signal"):
        return str(e.facts.get("error") or e.facts.get("signal"))
    if e.kind == "crashed" and e.facts.get("exit_code") is not None:
        return f"exit code {e.facts['exit_code']}"
    return (e.detail or "").partition(": ")[0] or e.kind  # detail: "NAME: text"


class Drawn(NamedTuple):
    """A request of a member's that a fault (``fault_id``) answered with an error: the fault's ``hit`` row."""
    hit: dict
    fault_id: str


def _drawn_by(h: History, member: str, error: str, at: int) -> Drawn | None:
    """The last request of this member a fault answered with this very error, before ``at``."""
    hits = [Drawn(hit, f.id) for f in h.faults if f.params.get("error") == error for hit in f.hits
            if hit.get("member") == member and hit.get("at_ms", OPEN) <= at]
    return max(hits, key=lambda d: d.hit["at_ms"], default=None)


def _expected_by(x: Facts, member: str, at: int) -> str | None:
    """Who expects this member's fatal end: "scenario" (analysis.expected_fatal), a fault's id (its row's
    ``expected_fatal``, a fault injected before the end), or None."""
    if member in x.expected_fatal or ANY_MEMBER in x.expected_fatal:
        return "scenario"
    return next((f.id for f in x.history.faults if member in f.expected_fatal and f.injected_at_ms <= at), None)


@check("member_fatal", needs=("events",), unit="members that ended on a fatal client error the scenario did not expect",
       color="#393b79")
def member_fatal(x: Facts):
    """A member killed by its own client (FENCED_INSTANCE_ID, or any error the client marks fatal): in production
    an application that died, although its partitions move on and the run may otherwise read valid. One anomaly
    per fatal end, with the error, the request that drew it (the member's own log, else the rpc fault that answered
    that member with that error), its generation and the fault before it. Ends the scenario or a fault expects are
    listed in the info, not reported."""
    h = x.history
    out, expected = [], []
    for e in fatal_ends(h):
        error = _error_of(e)
        text = (e.detail or "").removeprefix(f"{error}: ")
        drawn = _drawn_by(h, e.member, error, e.ts)
        generation = e.generation if e.generation is not None and e.generation >= 0 else \
            (drawn.hit.get("generation") if drawn else None)
        by = _expected_by(x, e.member, e.ts)
        if by is not None:
            expected.append({"member": e.member, "error": error, "time_ms": e.ts, "expected_by": by})
            continue
        before = [f for f in h.faults if f.injected_at_ms <= e.ts]
        out.append({"type": "member_fatal", "topic": None, "partition": None, "offsets": None, "count": 1,
                    "members": [e.member], "generations": [generation] if generation is not None else [],
                    "time_ms": [e.ts, e.ts], "error": error, "error_text": text, "event": e.kind,
                    "request": e.facts.get("request") or (drawn.hit.get("api") if drawn else None),
                    "request_from": "member" if e.facts.get("request") else (drawn.fault_id if drawn else None),
                    "generation": generation, "preceding_fault": before[-1].id if before else None,
                    "reason": f"{e.member} ended on {error}" + (f" ({text})" if text else "")})
    return CheckResult(out, len(out), {"expected": expected, "expected_fatal": list(x.expected_fatal)})
