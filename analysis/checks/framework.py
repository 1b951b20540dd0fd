"""The check framework: a check is one function from the facts of one run (``Facts``: the history, what
kernels.check_groups reported, the records read back) to its anomalies, declared once in REGISTRY by :func:`check`
with its name, the inputs it needs, whether its findings make a run invalid, its count unit and its colour.

Every anomaly has one shape::

    {"type", "topic", "partition", "offsets": [first, last], "count", "members", "generations",
     "time_ms": [t0, t1], "fault_ids", ...type-specific fields}

``offsets`` is an inclusive range; ``count`` is in the check's unit. The summary, the report's type list
and colours, ``compare``'s columns and the CLI help are derived from REGISTRY. The checks live in the modules
beside this one (analysis/checks/__init__.py imports them in their report order); a new check is one module with
a function decorated with :func:`check`, and one test.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from analysis.checks.context import Context, Duplicates, duplicates
from analysis.engine.kernels import RECORD_OUTPUTS
from analysis.engine.spark_plan import Step
from analysis.figures import run_figures
from analysis.rundir.history import OPEN, History


@dataclass
class Facts:
    """What the checks read: the history, the per-partition results of kernels.check_groups (``got``),
    the records read back (``rows``, with their period), and a way to ask Spark for more (``query``)."""
    history: History
    ctx: Context
    got: dict
    rows: list[dict]
    need_rows: set
    steps: list[Step]
    query: Callable | None = None          # query(kind, arg) -> rows: a follow-up Spark query, only when needed
    stall_ms: int = 5_000
    observe_end: int = OPEN
    expected_fatal: tuple = ()             # members the scenario expects to end on a fatal error (ANY_MEMBER: any)
    has_columns: tuple = ()
    memo: dict = field(default_factory=dict)

    def once(self, key, fn):
        if key not in self.memo:
            self.memo[key] = fn()
        return self.memo[key]

    def rounds(self) -> list[dict]:
        """The group's rebalance rounds, found once and shared by the checks and the report's figures."""
        return self.once("rounds", lambda: run_figures.rounds(self.history))

    def duplicates(self) -> Duplicates:
        """Every offset consumed more than once, with how each repeat is judged, found once (duplicate, over_budget)."""
        rows = [r for r in self.rows if (r["topic"], r["partition"], r["offset"] >> 6) in self.need_rows]
        return self.once("dup", lambda: duplicates(self.ctx, self.got.get("groups", []), rows))


class CheckResult(NamedTuple):
    """What a check returns: its anomalies, its count in its unit (``total``: a tuple's ``count`` is a method) and
    what else it tells (its info; a ``status`` there replaces "ran")."""
    anomalies: list[dict]
    total: int
    info: dict


# What a check may read of the record-level pass: what kernels.check_groups reports (Facts.got, by name), the records
# read back (Facts.rows) and the steps back (Facts.steps); and the follow-up Spark questions it may ask (Facts.query,
# answered by job.py).
READ_BACKS = ("rows", "steps")
# A check a run gives nothing to: not run, with one of these reasons, and not "could not verify" either (a run that
# kept no state has no state to check; members that commit on their own log no commit to judge); any other reason it
# did not run is an input missing.
NOT_APPLICABLE = "no state/"
NO_COMMITS = "no commit windows: the members commit on their own (Kafka Streams: every commit.interval.ms)"
NOT_PROMISED = "no exactly-once promised (no transactional member, no exactly_once_v2, or output not read_committed)"
NOT_VERIFIED = "no verified/ reader read the output (only transactional members' runs have one: commit: transaction)"
NOT_APPLICABLE_REASONS = (NOT_APPLICABLE, NO_COMMITS, NOT_PROMISED, NOT_VERIFIED)
QUERIES = ("unacked", "copies", "acked_in_block", "window_deliveries", "commits_ahead", "unplaced", "consumed_keys")


@dataclass(frozen=True)
class Check:
    name: str
    needs: tuple            # "events", "faults", "state" (state/), "eos" (exactly once promised), "verified" (a
                            # read_committed verified reader, verified/), consumed/ columns
    invalidates: bool
    unit: str
    color: str
    run: Callable           # Facts -> CheckResult; may raise Undecided
    reads: tuple = ()       # of the record-level pass: RECORD_OUTPUTS and READ_BACKS
    asks: tuple = ()        # follow-up questions: QUERIES


REGISTRY: dict[str, Check] = {}


def check(name, *, needs=(), reads=(), asks=(), invalidates=True, unit, color):
    """Register a check under ``name``: what it needs of the run directory (``needs``), what it reads of the
    record-level pass (``reads``) and the follow-up Spark questions it asks (``asks``); a name that is no output or
    question of the pass is refused here, when the check is defined."""
    unknown = [r for r in reads if r not in RECORD_OUTPUTS + READ_BACKS] + [q for q in asks if q not in QUERIES]
    if unknown:
        raise ValueError(f"check {name}: {unknown[0]!r} is no output of the record-level pass nor a question; outputs: "
                         f"{', '.join(RECORD_OUTPUTS + READ_BACKS)}; questions: {', '.join(QUERIES)}")

    def register(fn):
        REGISTRY[name] = Check(name, tuple(needs), invalidates, unit, color, fn, tuple(reads), tuple(asks))
        return fn
    return register


def checks_needing(*needs: str) -> set[str]:
    """The checks that need any of ``needs`` (e.g. "state", "eos", "verified": what a plain run has not)."""
    return {n for n, c in REGISTRY.items() if set(c.needs) & set(needs)}


def invalid_types() -> tuple:
    return tuple(n for n, c in REGISTRY.items() if c.invalidates)
