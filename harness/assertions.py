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

    @property
    def report(self) -> Path:
        return self.run_dir / "report" / "index.html"

    def rpc_hits(self, api: str | None = None, action: str | None = None, target: str | None = None) -> list[dict]:
        """The requests the run's rpc faults acted on (faults.jsonl), oldest first, each with its fault's `fault_id`
        and `action`: at_ms, member, api, version, member_id, generation (see faults/rpc.py)."""
        path = self.run_dir / "faults.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line] if path.is_file() else []
        hits = [{**h, "fault_id": f["id"], "action": f["params"].get("action")} for f in rows if f["kind"] == "rpc"
                and target in (None, f["target"]) and action in (None, f["params"].get("action")) for h in f.get("hits", [])
                if api in (None, h["api"])]
        return sorted(hits, key=lambda h: h["at_ms"])

    # ------------------------------------------------------------------------------ assertions
    def assert_valid(self) -> None:
        """No anomaly of a check that invalidates a run, and no check that crashed or could not decide."""
        s = self._analysed()
        if s["valid"] is not True:
            counts = {t: n for t, n in s["anomaly_counts"].items() if n}
            self._fail(f"the run is {'invalid' if s['valid'] is False else 'undecided'}: anomalies {counts or 'none'}"
                       f"{self._undecided()}", s["anomalies"])

    def assert_no_loss(self) -> None:
        """Every record the brokers acknowledged was consumed (records inside an at-most-once loss budget
        are not losses)."""
        s = self._analysed()
        self._ran("lost")
        lost = s["lost_records"]
        if lost:
            self._fail(f"{lost} acknowledged record(s) were never consumed", self._of("lost"))

    def assert_duplicates_within_budget(self) -> None:
        """Every re-delivery is one the commit protocol allows: none is `duplicate_over_budget`."""
        s = self._analysed()
        self._ran("duplicate_over_budget")
        over = s["anomaly_counts"].get("duplicate_over_budget", 0)
        if over:
            self._fail(f"{over} re-delivered record(s) over the commit budget "
                       f"({s['duplicate_extra_deliveries']} re-deliveries in all)", self._of("duplicate_over_budget"))

    def assert_no_stall(self) -> None:
        """The group never stopped while it could go on: no partition with records waiting and a live owner went
        undelivered, and no member that joined went unassigned, for longer than the scenario's stall_ms."""
        s = self._analysed()
        self._ran("stall")
        n = s["anomaly_counts"].get("stall", 0)
        if n:
            self._fail(f"{n} stall(s) longer than {s['checks']['stall'].get('stall_ms')} ms", self._of("stall"))

    def assert_rebalances(self, at_most: int, fault: str | None = None) -> None:
        """At most ``at_most`` rebalances in the run, or caused by the fault with id ``fault``."""
        s = self._analysed()
        if fault is not None:
            found = self._fault(fault)
            n, what = found["rebalances"] or 0, f"after fault {fault}"
        else:
            n, what = s["rebalances"], "in the run"
            if n is None:
                self._fail("the run has no member events, so its rebalances are unknown", [])
        if n > at_most:
            rounds = (s.get("rebalance_figures") or {}).get("rounds") or []
            listed = "; ".join(f"#{r['index']} generation {r['generation']} members {', '.join(r['members'])}"
                               for r in rounds[-EXAMPLES:])
            self._fail(f"{n} rebalance(s) {what}, expected at most {at_most}" + (f" (last: {listed})" if listed else ""), [])

    def assert_no_revocation(self, member: str) -> None:
        """``member`` never had a partition revoked (or lost) while it stayed in the group."""
        s = self._analysed()
        if member not in s["members"]:
            self._fail(f"no member {member!r} in this run (members: {', '.join(s['members']) or 'none'})", [])
        revoked = ((s.get("rebalance_figures") or {}).get("revocations_while_alive") or {}).get("by_member", {})
        if revoked.get(member):
            self._fail(f"{member} had {revoked[member]} partition(s) revoked while it stayed in the group", [])

    def assert_time_to_stable(self, below_s: float, fault: str | None = None) -> None:
        """After each fault (or the one with id ``fault``), every partition had an owner again within ``below_s``."""
        s = self._analysed()
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
            self._fail("the run was not analysed (chaos_run(..., analyze=False) or `analysis.enabled: false`)", [])
        return self.summary

    def _ran(self, check: str) -> None:
        state = self.summary["checks"].get(check, {})
        if state.get("status") != "ran":
            detail = state.get("error") or state.get("reason") or ""
            self._fail(f"the {check!r} check did not decide: {state.get('status', 'missing')}"
                       + (f" ({detail})" if detail else ""), [])

    def _fault(self, fault_id: str) -> dict:
        for f in self.summary["faults"]:
            if f["id"] == fault_id:
                return f
        self._fail(f"no fault {fault_id!r} in this run (faults: {', '.join(f['id'] for f in self.summary['faults']) or 'none'})", [])

    def _of(self, kind: str) -> list[dict]:
        return [a for a in self.summary["anomalies"] if a["type"] == kind]

    def _undecided(self) -> str:
        bad = [f"{name}: {c['status']}" for name, c in self.summary["checks"].items() if c["status"] in ("crashed", "unknown")]
        return f"; checks not decided: {', '.join(bad)}" if bad else ""

    def _fail(self, what: str, anomalies: list[dict]) -> None:
        lines = [what] + [f"  {describe(a)}" for a in anomalies[:EXAMPLES]]
        if len(anomalies) > EXAMPLES:
            lines.append(f"  ... and {len(anomalies) - EXAMPLES} more in the report")
        lines.append(f"report: {self.report}" if self.report.is_file() else f"run directory: {self.run_dir}")
        raise ChaosAssertionError("\n".join(lines))


def describe(a: dict) -> str:
    """One anomaly on one line: type, where, who, and the faults it is attributed to."""
    if a.get("offsets"):
        first, last = a["offsets"]
        where = f"{a['topic']}-{a['partition']} offset{'s' if last != first else ''} {first}{'' if last == first else f'-{last}'}"
    else:
        where = f"{a['count']} case(s)"
    who = f", members {', '.join(a['members'])}" if a.get("members") else ""
    why = f" ({a['reason']})" if a.get("reason") else ""
    faults = f", during {', '.join(a['fault_ids'])}" if a.get("fault_ids") else ""
    return f"{a['type']}: {where}{who}{why}{faults}"
