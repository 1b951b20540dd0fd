"""What a chaos test asserts about one analysed run. `chaos_run` returns a :class:`ChaosRun`; each
``assert_*`` method fails with what happened (the anomalies, their faults) and where the report is, so a
user's test needs no import from the project:

    run = chaos_run(scenario)
    run.assert_no_loss()
    run.assert_rebalances(at_most=2)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = 5  # anomalies quoted in a failure message
WHY_NOT_DECIDED = {"unknown": "ran but could not decide", "not_run": "did not run", "skipped": "did not run",
                   "crashed": "crashed"}  # `skipped`: summaries written before `not_run`


class ChaosAssertionError(AssertionError):
    pass


@dataclass
class ChaosRun:
    """One run of chaos_run: its directory, its analysis (`summary`, as in report/summary.json), how long each
    phase took, the faults the cluster could not take, and what went wrong in the run itself."""
    run_dir: Path
    summary: dict | None
    phases: dict = field(default_factory=dict)
    skipped_faults: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    drained: bool = True
    unsettled: list[str] = field(default_factory=list)  # the group did not settle (harness.settling): a finding

    @classmethod
    def load(cls, run_dir: Path) -> ChaosRun:
        """A run directory that already exists (kept by chaos_run, or written by your own application) as a
        ChaosRun: its report/summary.json (None if it was never analysed) and its run.json, if any."""
        run_dir = Path(run_dir)
        if not run_dir.is_dir():
            raise ChaosAssertionError(f"{run_dir}: no such run directory")
        summary, facts = (_json_file(run_dir / name) for name in ("report/summary.json", "run.json"))
        facts = facts or {}
        return cls(run_dir, summary, facts.get("phases_s", {}), facts.get("skipped_faults", []), facts.get("errors", []),
                   facts.get("drained", True), facts.get("unsettled", []))

    @property
    def report(self) -> Path:
        return self.run_dir / "report" / "index.html"

    def rpc_hits(self, api: str | None = None, action: str | None = None, target: str | None = None) -> list[dict]:
        """The requests the run's rpc faults acted on (faults.jsonl), oldest first, each with its fault's `fault_id`
        and `action`: at_ms, member, api, version, member_id, generation (see faults/rpc.py). Fails when the run has
        no rpc fault on that api, action and target: an empty list then would only say the test asked for the wrong
        thing. A fault that exists and was never hit gives an empty list."""
        path = self.run_dir / "faults.jsonl"
        if not path.is_file():
            self._fail("the run has no faults.jsonl, so no rpc fault acted on any request", [])
        rpc = [f for f in map(json.loads, filter(None, path.read_text().splitlines())) if f["kind"] == "rpc"]
        asked = [f for f in rpc if api in (None, f["params"].get("api")) and action in (None, f["params"].get("action"))
                 and target in (None, f["target"])]
        if not asked:
            wanted = " ".join(w for w in ("rpc fault", api, action, target and f"on {target}") if w)
            have = ", ".join(f"{f['id']} ({f['params'].get('api')} {f['params'].get('action')} on {f['target']})" for f in rpc)
            self._fail(f"no {wanted} in this run (rpc faults: {have or 'none'})", [])
        hits = [{**h, "fault_id": f["id"], "action": f["params"].get("action")} for f in asked for h in f.get("hits", [])
                if api in (None, h["api"])]
        return sorted(hits, key=lambda h: h["at_ms"])

    # ------------------------------------------------------------------------------ assertions
    def assert_valid(self) -> None:
        """No anomaly of a check that invalidates a run, and every such check ran and decided: one that did not
        run, crashed or could not decide is "could not verify", never a pass."""
        s = self._analysed()
        if s["valid"] is not True:
            counts = {t: n for t, n in s["anomaly_counts"].items() if n}
            undecided = undecided_checks(s["checks"])
            self._fail(f"the run is {'invalid' if s['valid'] is False else 'undecided'}: anomalies {counts or 'none'}"
                       + (f"; checks not decided: {undecided}" if undecided else ""), s["anomalies"])
        from analysis.api import invalid_types
        undecided = undecided_checks({name: s["checks"].get(name) for name in invalid_types()})
        if undecided:
            self._fail(f"could not verify that the run is valid: checks not decided: {undecided}", [])

    def assert_no_loss(self) -> None:
        """Every record the brokers acknowledged was consumed (records inside an at-most-once loss budget
        are not losses), those acknowledged without an offset too (`lost_unplaced`)."""
        s = self._analysed()
        self._ran("lost")
        lost = (s["lost_records"] or 0) + (s["anomaly_counts"].get("lost_unplaced") or 0)
        if lost:
            self._fail(f"{lost} acknowledged record(s) were never consumed", self._of("lost") + self._of("lost_unplaced"))

    def assert_duplicates_within_budget(self) -> None:
        """Every re-delivery is one the commit protocol allows: none is `duplicate_over_budget`."""
        s = self._analysed()
        self._ran("duplicate_over_budget")
        over = s["anomaly_counts"].get("duplicate_over_budget") or 0
        if over:
            self._fail(f"{over} re-delivered record(s) over the commit budget "
                       f"({s['duplicate_extra_deliveries']} re-deliveries in all)", self._of("duplicate_over_budget"))

    def assert_state_exact(self) -> None:
        """Every stateful key's final value (state/final.jsonl) holds each record of the key consumed, once: no
        `state_duplicate` nor `state_lost` (a double apply re-delivered within the commit budget is allowed)."""
        s = self._analysed()
        self._ran("state_duplicate")
        self._ran("state_lost")
        counts = {t: s["anomaly_counts"].get(t) or 0 for t in ("state_duplicate", "state_lost")}
        if any(counts.values()):
            self._fail(f"the state is not exact: {counts['state_duplicate']} update(s) applied twice, "
                       f"{counts['state_lost']} lost", self._of("state_duplicate") + self._of("state_lost"))

    def assert_settled(self) -> None:
        """The group became stable within run.stable_timeout_s and caught up within run.drain_timeout_s (read from
        run.json: no analysis needed); a group that did not is a finding (docs/DESIGN.md), named here."""
        from harness.settling import settled
        if not settled({"unsettled": self.unsettled, "drained": self.drained}):
            self._fail("the group did not settle: " + ("; ".join(self.unsettled) or "it had not caught up"), [])

    def assert_no_stall(self) -> None:
        """The group never stopped while it could go on: no partition with records waiting and a live owner went
        undelivered, and no member that joined went unassigned, for longer than the scenario's stall_ms."""
        s = self._analysed()
        self._ran("stall")
        n = s["anomaly_counts"].get("stall") or 0
        if n:
            self._fail(f"{n} stall(s) longer than {s['checks']['stall'].get('stall_ms')} ms", self._of("stall"))

    def assert_rebalances(self, at_most: int, fault: str | None = None) -> None:
        """At most ``at_most`` rebalances in the run, or caused by the fault with id ``fault``."""
        s = self._analysed()
        self._ran("rebalances")
        if fault is not None:
            n, what = self._fault(fault)["rebalances"], f"after fault {fault}"
        else:
            n, what = s["rebalances"], "in the run"
        if n is None:
            self._fail(f"could not verify: the rebalances {what} are unknown", [])
        if n > at_most:
            rounds = (s.get("rebalance_figures") or {}).get("rounds") or []
            listed = "; ".join(f"#{r['index']} generation {r['generation']} members {', '.join(r['members'])}"
                               for r in rounds[-EXAMPLES:])
            self._fail(f"{n} rebalance(s) {what}, expected at most {at_most}" + (f" (last: {listed})" if listed else ""), [])

    def assert_no_revocation(self, member: str) -> None:
        """``member`` never had a partition revoked (or lost) while it stayed in the group."""
        s = self._analysed()
        self._ran("rebalances")
        if member not in s["members"]:
            self._fail(f"no member {member!r} in this run (members: {', '.join(s['members']) or 'none'})", [])
        revoked = ((s.get("rebalance_figures") or {}).get("revocations_while_alive") or {}).get("by_member", {})
        if revoked.get(member):
            self._fail(f"{member} had {revoked[member]} partition(s) revoked while it stayed in the group", [])

    def assert_time_to_stable(self, below_s: float, fault: str | None = None) -> None:
        """After each fault (or the one with id ``fault``), every partition had an owner again within ``below_s``."""
        s = self._analysed()
        self._ran("rebalances")
        faults = [self._fault(fault)] if fault is not None else s["faults"]
        if not faults:
            self._fail("the run injected no fault, so there is no time to stable to check", [])
        for f in faults:
            t = f.get("time_to_stable_ms")
            if t is None:
                self._fail(f"after fault {f['id']} ({f['kind']} {f['target']}) the group was not stable again "
                           f"before the run ended", [])
            if t >= below_s * 1000:
                self._fail(f"after fault {f['id']} ({f['kind']} {f['target']}) the group took {t / 1000:.1f} s to "
                           f"be stable again, expected under {below_s:g} s", [])

    # ------------------------------------------------------------------------------ helpers
    def _analysed(self) -> dict:
        if self.summary is None:
            self._fail("the run was not analysed: no report/summary.json (chaos_run(..., analyze=False), "
                       "`analysis.enabled: false`, or a run directory never given to `kafka-chaos analyze`)", [])
        return self.summary

    def _ran(self, check: str) -> None:
        why = not_decided(self.summary["checks"].get(check))
        if why:
            self._fail(f"could not verify: the {check} check {why}", [])

    def _fault(self, fault_id: str) -> dict:
        for f in self.summary["faults"]:
            if f["id"] == fault_id:
                return f
        self._fail(f"no fault {fault_id!r} in this run (faults: {', '.join(f['id'] for f in self.summary['faults']) or 'none'})", [])

    def _of(self, kind: str) -> list[dict]:
        return [a for a in self.summary["anomalies"] if a["type"] == kind]

    def _fail(self, what: str, anomalies: list[dict]) -> None:
        lines = [what] + [f"  {describe(a)}" for a in anomalies[:EXAMPLES]]
        if len(anomalies) > EXAMPLES:
            lines.append(f"  ... and {len(anomalies) - EXAMPLES} more in the report")
        lines.append(f"report: {self.report}" if self.report.is_file() else f"run directory: {self.run_dir}")
        raise ChaosAssertionError("\n".join(lines))


def not_decided(state: dict | None) -> str | None:
    """Why a check's outcome in summary.json (`checks[name]`) is no verdict, or None when it ran and decided.
    Reads both shapes: status ran, unknown, not_run or crashed (with `reason` or `error`), and the older skipped."""
    if state is None:
        return "is not in the summary"
    status = state.get("status")
    if status == "ran":
        return None
    detail = state.get("reason") or state.get("error")
    return WHY_NOT_DECIDED.get(status, f"has status {status!r}") + (f" ({detail})" if detail else "")


def undecided_checks(checks: dict) -> str:
    """The checks of summary.json's `checks` that gave no verdict, each with why: "lost did not run (no events)". A
    check the run gives nothing to (the state checks of a run that kept no state, the commit checks of members that log
    no commit) is none of them."""
    from analysis.api import NOT_APPLICABLE_REASONS
    return ", ".join(f"{name} {why}" for name, state in checks.items()
                     if (why := not_decided(state)) and (state or {}).get("reason") not in NOT_APPLICABLE_REASONS)


def _json_file(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ChaosAssertionError(f"{path}: unreadable ({exc})") from None


def describe(a: dict) -> str:
    """One anomaly on one line: type, where, who, and the faults it is attributed to."""
    if a.get("offsets"):
        first, last = a["offsets"]
        where = f"{a['topic']}-{a['partition']} offset{'s' if last != first else ''} {first}{'' if last == first else f'-{last}'}"
    elif a.get("topic") is not None and a.get("partition") is not None:  # a record with no offset (lost_unplaced)
        where = f"{a['topic']}-{a['partition']}" + (f", {a['producer_id']} seq {a['seq']}" if a.get("producer_id") else "")
    else:
        where = f"{a['count']} case(s)"
    who = f", members {', '.join(a['members'])}" if a.get("members") else ""
    why = f" ({a['reason']})" if a.get("reason") else ""
    faults = f", during {', '.join(a['fault_ids'])}" if a.get("fault_ids") else ""
    return f"{a['type']}: {where}{who}{why}{faults}"
