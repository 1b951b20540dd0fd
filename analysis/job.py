"""analyze(run_dir): the checker. Reads only the run directory; writes report/summary.json and report/index.html."""
from __future__ import annotations

import json
import os
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from analysis.checks import REGISTRY, invalid_types
from analysis.checks.attribution import attribute
from analysis.checks.commit_ahead import commit_ahead_asks
from analysis.checks.context import Context, duplicate_blocks_needing_rows
from analysis.checks.framework import NO_COMMITS, NOT_APPLICABLE, NOT_PROMISED, NOT_VERIFIED, Facts
from analysis.engine import kernels, spark_plan
from analysis.engine.spark import (SparkUnavailable, apply_runtime_conf, default_parallelism, get_session, is_started,
                                   jvm_log_mark, jvm_log_since)
from analysis.errors import AnalysisFailed, InputError
from analysis.figures import run_figures as figures
from analysis.figures import cell, state_band, state_cost
from analysis.figures import transactions as transaction_figures
from analysis.pages.compare import COLUMNS, read_summary, row_for, write_table
from analysis.rundir import coordinator_log, history, inputs

SUMMARY_VERSION = 1
DEFAULT_GRACE_MS = 30_000
DEFAULT_MAX_EXAMPLES = 20


def check_names() -> tuple[str, ...]:
    """Every check of the summary: the registered ones as they are now (one may be registered after this module was
    imported), then attribution and the rebalance figures."""
    return (*REGISTRY, "attribution", "rebalances")


class _Run:
    """State of one analysis: what ran, what was skipped, what crashed."""

    def __init__(self):
        self.checks: dict[str, dict] = {}
        self.errors: list[str] = []

    def skip(self, name, reason):
        self.checks[name] = {"ran": False, "status": "not_run", "reason": reason}

    def ran(self, name, **info):
        self.checks[name] = {"ran": True, "status": "ran", **info}

    def guarded(self, names, fn, *args):
        """Run fn; if it raises (anything but InputError), the named checks become 'crashed' (valid: unknown)."""
        try:
            return fn(*args)
        except InputError:
            raise
        except Exception as exc:
            text = _one_line(exc)
            self.errors.append(f"{', '.join(names)}: {text}\n{traceback.format_exc()}")
            for name in names:
                self.checks[name] = {"ran": False, "status": "crashed", "error": text}
            return None


@kernels.gc_paused()
def analyze(run_dir, *, spark=None, master: str | None = None, remote: str | None = None, conf: dict | None = None,
            grace_ms: int = DEFAULT_GRACE_MS, protocol: str = "auto", max_examples: int = DEFAULT_MAX_EXAMPLES,
            stall_ms: int | None = None, expected_fatal=(), progress=None) -> dict:
    """Check one run directory (contract v1, DESIGN.md) and write ``report/summary.json`` and ``report/index.html``.

    Returns the summary dict. ``valid`` is True (no anomaly of a check that invalidates a run: see
    checks.REGISTRY), False, or "unknown" (a check crashed, or a duplicate's budget could not be decided).
    ``grace_ms``: an anomaly is attributed to a fault when it happens between injection and heal + grace.
    ``stall_ms``: the ``stall`` check's threshold; default :func:`default_stall_ms`.
    ``expected_fatal``: members whose end on a fatal client error the scenario expects (``"any"``: every member);
    ``member_fatal`` lists them in its info instead of reporting them.
    ``protocol``: "auto" (from each member's ``started`` event), "eager" or "cooperative": how ``assigned``
    events are read when rebuilding ownership. ``progress(phase, detail)`` is called per phase.
    ``master``/``remote``/``conf``: where Spark runs (spark.get_session).
    Raises :class:`InputError` for bad input (message names the file and the column), :class:`SparkUnavailable`
    when no Spark can be had, and :class:`AnalysisFailed` for any other error (one line naming the step; the
    traceback is in ``report/analysis.log``, beside what Spark and the JVM printed during the analysis).
    """
    run_dir = Path(run_dir).resolve()
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: run directory does not exist")
    step, mark, log = _Step(progress), jvm_log_mark(), run_dir / "report" / ANALYSIS_LOG
    try:
        summary, errors = _analyze(run_dir, spark, master, remote, conf, grace_ms, protocol, max_examples, stall_ms,
                                   expected_fatal, step)
    except InputError:
        _write_log(log, mark)
        raise
    except SparkUnavailable as exc:  # what the JVM said before it went away is in the log
        written = _write_log(log, mark)
        raise SparkUnavailable(f"{exc}; details in {written}" if jvm_log_since(mark) else str(exc)) from None
    except Exception as exc:
        written = _write_log(log, mark, f"the analysis failed at {step.name!r}:\n{traceback.format_exc()}")
        raise AnalysisFailed(step.name, _one_line(exc), written) from None
    _write_log(log, mark, "".join(f"a check crashed: {e}\n" for e in errors))
    return summary


ANALYSIS_LOG = "analysis.log"  # in report/: what Spark and the JVM printed during the analysis, and its own errors


class _Step:
    """The progress callback, remembering the phase under way: a failure names it."""

    def __init__(self, progress):
        self.progress, self.name = progress, "starting"

    def __call__(self, phase: str, detail: str = "") -> None:
        self.name = phase
        if self.progress is not None:
            self.progress(phase, detail)


def _write_log(path: Path, mark, failure: str = "") -> Path:
    """report/analysis.log: the JVM's text since ``mark`` and the failure, if any. Where the report's folder cannot
    be written, a temporary file instead (the failure's details are never lost); the path written."""
    text = jvm_log_since(mark) + failure
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path
    except OSError:
        fd, name = tempfile.mkstemp(prefix="kafka-chaos-analysis-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f"{path} could not be written\n{text}")
        return Path(name)


def _analyze(run_dir: Path, spark, master, remote, conf, grace_ms, protocol, max_examples, stall_ms, expected_fatal,
             say) -> tuple[dict, list[str]]:
    """The analysis proper: the summary, and the tracebacks of the checks that crashed."""
    t_start = time.monotonic()
    say("loading", str(run_dir))
    files = inputs.precheck(run_dir, "produced") + inputs.precheck(run_dir, "consumed")
    hist = history.build(run_dir, protocol)
    if spark is None:
        if not is_started(master, remote, conf):
            say("starting Spark", remote or master or "local[*]")
        spark = get_session(master, remote, conf)
    apply_runtime_conf(spark)
    run = _Run()
    warnings = list(hist.warnings)
    size = sum(p.stat().st_size for p in files)
    saved = _tune(spark, size)  # before the files are read: how they are listed is one of its settings
    result = None
    stall_ms = stall_ms if stall_ms is not None else default_stall_ms(hist)
    try:
        produced = inputs.load(spark, run_dir, "produced")
        consumed = inputs.load(spark, run_dir, "consumed")
    except BaseException:
        _restore(spark, saved)
        raise
    try:
        say("scanning", f"{len(produced.files)} produced + {len(consumed.files)} consumed file(s), {size / 1e6:.1f} MB")
        own = history.Ownership(hist)
        cfg, names = scan_config(hist, own, stall_ms, sequence="n" in consumed.in_every_file)
        got = spark_plan.check_partitions(spark_plan.aggregate(produced.df, consumed.df, own.bounds), cfg,
                                       in_driver=size < SMALL_INPUT_BYTES)
        sides = spark_plan.side_totals(got)
        if sides.get(kernels.BAD_PRODUCED):
            warnings += inputs.diagnose(produced)
        if sides.get(kernels.BAD_CONSUMED):
            warnings += inputs.diagnose(consumed)
        missing = spark_plan.unnamed(got, names)
        if any(missing.values()):
            names.update(spark_plan.resolve_names(produced, consumed, missing["topic"], missing["member"]))
        spark_plan.name_rows(got, names)
        say("checks", "")
        result = _checks(spark, run, got, sides, hist, own, produced, consumed, grace_ms, stall_ms, (cfg, names),
                         expected_fatal=(expected_fatal,) if isinstance(expected_fatal, str) else tuple(expected_fatal or ()))
    except InputError:
        raise
    except Exception as exc:  # the scan itself failed: nothing is known
        run.errors.append(f"scan: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        for name in check_names():
            run.checks[name] = {"ran": False, "status": "crashed", "error": _one_line(exc)}
    finally:
        _restore(spark, saved)
    say("report", "")
    summary, extra = _summary(run_dir, run, result, hist, produced, consumed, size, grace_ms, max_examples, warnings,
                              spark)
    summary["analysis_seconds"] = round(time.monotonic() - t_start, 3)
    from analysis.pages import report
    try:
        report.write(run_dir, summary, extra, run.errors)
    except Exception as exc:  # a broken page must not cost the verdict: write a bare one
        run.errors.append(f"report: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        summary["errors"] = [e.splitlines()[0] for e in run.errors]
        report.write_bare(run_dir, summary, run.errors)
    _write_anomalies(run_dir / "report" / "anomalies.jsonl", extra["all_anomalies"])
    summary["analysis_seconds"] = round(time.monotonic() - t_start, 3)
    (run_dir / "report" / "summary.json").write_text(json.dumps(summary, indent=2, default=json_default) + "\n")
    return summary, run.errors


def _write_anomalies(path: Path, anomalies: list[dict]) -> None:
    """Every anomaly row, uncapped, one JSON object a line (summary.json keeps capped examples): what the zoo's
    signatures and a user's own tooling read."""
    with path.open("w", encoding="utf-8") as out:
        for a in anomalies:
            out.write(json.dumps(a, default=json_default) + "\n")


def _one_line(exc) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


# Below it: no adaptive re-planning, and the scan's groups are checked in the driver (at most one a row of an input this
# small, a few hundred MB of Arrow at worst; above it the executors check them and the driver holds only results).
SMALL_INPUT_BYTES = 64 << 20
FILE_OPEN_COST = 64 << 10  # bytes a file's opening is worth when splits are packed: a local file's open is cheap
# the aggregation's first-level ("fast") hash map holds 2^18 groups, not Spark's 2^16: a scan task of a 10M-record run
# folds a few hundred thousand groups, and past the fast map each row is looked up twice (docs/benchmarks-history.md,
# seventh increment: 8-10 % of the scan, in both row orders)
FAST_HASH_MAP_BITS = 18


def _tune(spark, size: int) -> dict:
    """Per-analysis settings (restored afterwards): few shuffle partitions; input splits of a sixth of each core's
    share of the input, so that every core has six scan tasks (fewer below 4 MB a split; one file a task left a core idle);
    not capped at Spark's 128 MB, which gave a large input's tasks too few rows for their partial aggregation to
    reduce (100M shuffled records: 9 % slower, docs/benchmarks-history.md, eleventh increment); many small files packed
    into one split (Spark's default open cost, 4 MiB, made each of 500 members' files a task of its own); a larger
    first-level aggregation hash map; the input files listed on the driver, which named them (past 32 paths Spark
    lists them with a job); for small inputs no adaptive re-planning, whose fixed cost dominates a small run (nor
    a Python stage for the groups' checks: ``spark_plan.check_partitions(in_driver=...)``, in :func:`analyze`).
    (Whole-stage code generation stays on: it was off for small inputs until measured; it is faster at every
    size, the cold first call included: docs/benchmarks-history.md, sixth increment.)"""
    cores = default_parallelism(spark)
    conf = {"spark.sql.shuffle.partitions": str(max(1, min(2 * cores, size // (32 << 20) + 1))),
            "spark.sql.files.maxPartitionBytes": str(max(4 << 20, size // (6 * cores))),
            "spark.sql.files.openCostInBytes": str(FILE_OPEN_COST),
            "spark.sql.codegen.aggregate.fastHashMap.capacityBit": str(FAST_HASH_MAP_BITS),
            "spark.sql.sources.parallelPartitionDiscovery.threshold": str(1 << 30)}
    if size < SMALL_INPUT_BYTES:
        conf["spark.sql.adaptive.enabled"] = "false"
    saved = {}
    for key, value in conf.items():
        try:
            saved[key] = spark.conf.get(key)
        except Exception:
            saved[key] = None
        spark.conf.set(key, value)
    return saved


def _restore(spark, saved: dict) -> None:
    for key, value in saved.items():
        try:
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        except Exception:
            pass


def json_default(o):
    """How summary.json encodes what json cannot (numpy numbers, sets, tuples); the analysis service answers alike."""
    try:
        import numpy as np
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
    except ImportError:
        pass
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(type(o).__name__)


def default_stall_ms(h: history.History) -> int:
    """Five heartbeat intervals of the slowest member (its `started` event says; the clients' default 3 s
    where none does, as under KIP-848), and at least 5 s: what a live member of a stable group never misses."""
    beats = [int(e.facts["heartbeat_interval_ms"]) for e in h.events if e.kind == "started" and e.facts.get("heartbeat_interval_ms")]
    return max(5_000, 5 * max(beats, default=3_000))


def scan_config(hist: history.History, own: history.Ownership, stall_ms: int, sequence: bool = False) -> tuple[dict, dict]:
    """What the executors need (ownership periods and members with events, keyed by the hashes the pass groups
    names by; ``sequence``: every consumed file carries ``n``, so the groups settle the order of consumption), and
    the names the history knows by (column, hash)."""
    topics = {p.topic for p in hist.periods} | {c.topic for c in hist.commits} | \
        {tp[0] for e in hist.events for tp in (e.partitions or [])}
    members = set(hist.members_with_events)
    th = {name: spark_plan.name_hash(name) for name in topics}
    mh = {name: spark_plan.name_hash(name) for name in members}
    cfg = {"periods": {(mh[m], th[t], p): v for (m, t, p), v in own.periods.items()},
           "with_events": {mh[m] for m in own.with_events}, "stall_ms": stall_ms, "sequence": sequence and hist.has_events}
    names = {**{("topic", h): t for t, h in th.items()}, **{("member", h): m for m, h in mh.items()}}
    return cfg, names


def _checks(spark, run: _Run, got, sides, hist, own, produced, consumed, grace_ms, stall_ms, scan, expected_fatal=()) -> dict:
    out: dict = {"anomalies": [], "counts": {}}
    none = spark_plan.SideTotal(0, None, None)
    produced_side, consumed_side = sides.get(kernels.PRODUCED, none), sides.get(kernels.CONSUMED, none)
    out["produced_ok"], out["produced_fail"] = produced_side.rows, sides.get(kernels.FAILED, none).rows
    out["produced_info"], out["consumed_rows"] = sides.get(kernels.INFO, none).rows, consumed_side.rows
    out["produced_unplaced"] = sides.get(kernels.UNPLACED, none).rows
    times = [t.tmin for t in (consumed_side, produced_side) if t.tmin is not None] + \
        [e.ts for e in hist.events] + [f.injected_at_ms for f in hist.faults]
    ends = [t.tmax for t in (consumed_side, produced_side) if t.tmax is not None] + \
        [e.ts for e in hist.events] + [f.healed_at_ms or f.injected_at_ms for f in hist.faults]
    out["t0"], out["t1"] = (min(times), max(ends)) if times else (0, 0)
    out["observe_end"] = consumed_side.tmax if consumed_side.tmax is not None else out["t1"]
    bin_ms = max(100, _nice_bin(max(1, out["observe_end"] - out["t0"]) // 200))
    out["rate_bin_ms"] = bin_ms

    stats = sorted(got.get("stats", []), key=lambda r: (r["topic"], r["partition"]))
    out["partitions"] = stats
    for key, col in (("consumed_distinct", "consumed_distinct"), ("extra_deliveries", "extra"), ("lost_total", "lost"),
                     ("unacked", "unacked"), ("produced_repeats", "produced_repeats")):
        out[key] = sum(r[col] for r in stats)
    out["period_summaries"] = got.get("periods", [])
    rate: dict = {}
    for r in got.get("rate", []):
        b = (r["start"] - out["t0"]) // bin_ms
        rate[b] = rate.get(b, 0) + r["n"]
    out["rate"] = sorted(rate.items())

    # the log pass: every step back, and the records of the blocks the groups could not settle (one job)
    ctx = Context.build(hist)
    need = duplicate_blocks_needing_rows(ctx, got.get("groups", []))
    blocks = need | {(r["topic"], r["partition"], r["b"]) for r in got.get("stall_blocks", [])}
    cfg, names = scan
    queries = {"unacked": lambda arg: spark_plan.unacked_rows(consumed, arg),
               "copies": lambda arg: spark_plan.write_copies(spark, produced.df, consumed.df, arg),
               "acked_in_block": lambda arg: spark_plan.acked_in_block(produced, arg),
               "window_deliveries": lambda arg: spark_plan.window_deliveries(consumed, arg),
               "commits_ahead": lambda arg: spark_plan.commits_ahead(produced, consumed, arg),
               "unplaced": lambda arg: spark_plan.unplaced_acks(produced, consumed),
               "consumed_keys": lambda arg: spark_plan.consumed_keys(produced, consumed)}
    early: dict = {}  # kind -> (its question, the answer under way)
    facts = Facts(hist, ctx, got, [], need, [], lambda kind, arg: early[kind][1].result()
                    if kind in early and early[kind][0] == arg else queries[kind](arg), stall_ms=stall_ms,
                    observe_end=out["observe_end"], expected_fatal=expected_fatal)
    with ThreadPoolExecutor(1, thread_name_prefix="kafka-chaos-early-question") as pool:  # waits for it on the way out
        _ask_early(pool, early, queries, facts)
        rows, steps = run.guarded(("duplicate", "backwards", "stall"), spark_plan.log_pass, consumed, cfg, own.bounds,
                                  blocks, names, hist.has_events, got.get("unordered", []),
                                  sum(r["n"] for r in got.get("unsequenced", []))) or ([], [])
        for r in rows:
            r["period"] = own.period_of(r["member"], r["topic"], r["partition"], r["epoch"])
        out["drilled_blocks"], out["drilled_rows"] = len(blocks), len(rows)
        facts.rows, facts.steps = rows, steps
        for name, chk in REGISTRY.items():
            if name in run.checks:
                continue
            missing = [n for n in chk.needs if not (hist.has_events if n == "events" else hist.has_faults if n == "faults"
                                                     else hist.state is not None if n == "state"
                                                     else hist.exactly_once if n == "eos"
                                                     else hist.verified if n == "verified"
                                                     else hist.logs_commits if n == "commits" else consumed.has(n))]
            if missing:
                no_events = "output-topic mode" if hist.output is not None else "no events"
                run.skip(name, {"events": no_events, "faults": "no faults.jsonl", "state": NOT_APPLICABLE,
                                "eos": NOT_PROMISED, "verified": NOT_VERIFIED if hist.exactly_once else NOT_PROMISED,
                                "commits": NO_COMMITS}.get(missing[0], f"no {'/'.join(missing)} columns in consumed/"))
                continue
            res = run.guarded((name,), chk.run, facts)
            if res is not None:
                anomalies, count, info = res
                out["anomalies"] += anomalies
                out["counts"][name] = count
                run.checks[name] = {"ran": True, "status": info.pop("status", "ran"), "count": count, **info}
    if "duplicate" in out["counts"]:
        out["duplicated_offsets"] = out["counts"]["duplicate"]
    if "lost" in out["counts"]:
        out["lost_records"] = out["counts"]["lost"]
    out["lost_within_budget_records"] = out["counts"].get("lost_within_budget")
    out["unseen_records"] = out["counts"].get("unseen")
    unseen = {(p["topic"], p["partition"]): p["unseen"] for p in run.checks.get("unseen", {}).get("lag", [])}
    for r in out["partitions"]:  # never consumed = lost (within a budget or not) + unseen
        r["unseen"] = unseen.get((r["topic"], r["partition"]), 0)
        r["lost"] -= r["unseen"]

    if hist.has_faults:
        run.guarded(("attribution",), attribute, out["anomalies"], hist, grace_ms)
        if "attribution" not in run.checks:
            stop = history.workload_stop(hist)  # nothing from here on is blamed on a fault
            run.ran("attribution", grace_ms=grace_ms, workload_stop_ms=None if stop == history.OPEN else stop)
    else:
        run.skip("attribution", "no faults.jsonl")
        for a in out["anomalies"]:
            a.setdefault("fault_ids", [])

    if hist.has_events:
        def rebalance_figures():
            rnds = facts.rounds()  # computed once, shared with the checks
            windows = figures.no_owner_windows(hist, [(r["topic"], r["partition"]) for r in stats], out["observe_end"])
            return {"rounds": rnds, "no_owner": windows, "revocations_while_alive": figures.revocations_while_alive(hist),
                    "recovery": figures.fault_recovery(hist, rnds, windows, grace_ms, out["observe_end"]),
                    "consumed_outside_ownership": sum(s["n"] for s in out["period_summaries"]
                                                      if s["period"] == kernels.OUTSIDE_PERIOD),
                    "outside_ownership_by_member": figures.outside_ownership(out["period_summaries"], kernels.OUTSIDE_PERIOD),
                    "protocols": hist.protocols}
        fig = run.guarded(("rebalances",), rebalance_figures)
        if fig is not None:
            out["figures"] = fig
            run.ran("rebalances", count=len(fig["rounds"]))
    else:
        run.skip("rebalances", "no events")
    return out


def _ask_early(pool, early: dict, queries: dict, facts) -> None:
    """Start, beside the log pass, the Spark questions that are known before any record is read again (the state
    check's consumed keys; commit_ahead's: the commits the groups cannot clear). Two small jobs at once keep both
    cores busy where one job's fixed costs leave one idle (docs/benchmarks-history.md, ninth increment); the check
    then takes the answer instead of asking."""
    if facts.history.has_events:
        try:
            asked = commit_ahead_asks(facts)[1]
        except Exception:  # the check meets the same error and reports it as its own
            asked = None
        if asked:
            early["commits_ahead"] = (asked, pool.submit(queries["commits_ahead"], asked))
    if facts.history.state is not None:
        early["consumed_keys"] = (None, pool.submit(queries["consumed_keys"], None))


def _nice_bin(ms: int) -> int:
    for step in (100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000):
        if ms <= step:
            return step
    return 3_600_000 * (ms // 3_600_000 + 1)


def _verdict(checks: dict, counts: dict) -> bool | str:
    if any((counts.get(t) or 0) > 0 for t in invalid_types()):
        return False
    if any(c["status"] in ("crashed", "unknown") for c in checks.values()):
        return "unknown"
    return True


def _summary(run_dir, run: _Run, res, hist, produced, consumed, size: int, grace_ms, max_examples, warnings, spark):
    checks = {name: run.checks.get(name, {"ran": False, "status": "crashed", "error": "not reached"}) for name in check_names()}
    res = res or {}
    counts = {t: res.get("counts", {}).get(t, 0) if checks[t]["ran"] else None for t in REGISTRY}
    anomalies = sorted(res.get("anomalies", []), key=lambda a: ((a["time_ms"][0] or 0), a["type"]))
    examples, ranges = [], {}
    for t in REGISTRY:
        of_type = [a for a in anomalies if a["type"] == t]
        ranges[t] = len(of_type)
        examples += of_type[:max_examples]
    examples.sort(key=lambda a: ((a["time_ms"][0] or 0), list(REGISTRY).index(a["type"])))
    fig = res.get("figures") or {}
    faults = []
    for f in hist.faults:
        attributed = {}
        for a in anomalies:
            if f.id in a.get("fault_ids", []) and a["type"] != "unhealed_fault":
                attributed[a["type"]] = attributed.get(a["type"], 0) + a["count"]
        rec = (fig.get("recovery") or {}).get(f.id, {})
        faults.append({"id": f.id, "kind": f.kind, "label": f.label, "target": f.target, "injected_at_ms": f.injected_at_ms,
                       "healed_at_ms": f.healed_at_ms, "params": f.params,
                       "duration_ms": None if f.healed_at_ms is None else f.healed_at_ms - f.injected_at_ms,
                       "anomalies": attributed, "rebalances": rec.get("rebalances"),
                       "time_to_stable_ms": rec.get("time_to_stable_ms"),
                       **({"hits": len(f.hits), "first_hit_ms": f.first_hit_ms} if f.counts_hits else {})})
    rounds = fig.get("rounds") or []
    no_owner = fig.get("no_owner") or {}
    valid = _verdict(checks, counts) if res else "unknown"
    coordinator = coordinator_log.summary(hist)
    summary = {
        "summary_version": SUMMARY_VERSION,
        "run_dir": str(run_dir),
        "valid": valid,
        "produced_records": res.get("produced_ok"),
        "consumed_rows": res.get("consumed_rows"),
        "duplicated_offsets": res.get("duplicated_offsets"),
        "duplicate_extra_deliveries": res.get("extra_deliveries"),
        "lost_records": res.get("lost_records"),
        "lost_within_budget_records": res.get("lost_within_budget_records"),
        "unseen_records": res.get("unseen_records"),
        "anomalies": examples,
        "anomaly_counts": counts,
        "anomaly_ranges": ranges,
        "anomalies_capped_at": max_examples,
        "count_units": {n: c.unit for n, c in REGISTRY.items()},
        "rebalances": len(rounds) if hist.has_events and fig else None,
        "faults": faults,
        "checks": checks,
        "produced_by_status": {"ok": res.get("produced_ok"), "fail": res.get("produced_fail"), "info": res.get("produced_info"),
                               "unplaced": res.get("produced_unplaced")},
        "consumed_distinct": res.get("consumed_distinct"),
        "consumed_unacked": res.get("unacked"),
        "produced_repeated_offsets": res.get("produced_repeats"),
        "rebalance_figures": None if not fig else {
            "rounds": [{k: r[k] for k in ("index", "generation", "start_ms", "end_ms", "members")} for r in rounds],
            "no_owner_total_ms": no_owner.get("total_ms"), "no_owner_longest_ms": no_owner.get("longest_ms"),
            "no_owner_by_partition": [{k: w[k] for k in ("topic", "partition", "total_ms", "windows")} for w in no_owner.get("partitions", [])],
            "revocations_while_alive": fig.get("revocations_while_alive"),
            "consumed_outside_ownership": fig.get("consumed_outside_ownership"),
            "outside_ownership_by_member": fig.get("outside_ownership_by_member"),
            "protocols": fig.get("protocols"),
        },
        "group_state_band": state_band.band(hist, res.get("t1") or 0, coordinator and coordinator["rounds"]),
        "coordinator_rounds": coordinator,
        "transactions": transaction_figures.figures(hist.transactions),
        "partitions": [{k: r[k] for k in ("topic", "partition", "produced", "consumed_rows", "consumed_distinct",
                                          "extra", "lost", "unseen", "unacked")} for r in res.get("partitions", [])],
        "members": sorted({s["member"] for s in res.get("period_summaries", [])} | set(hist.members_with_events)),
        "input": {"produced_files": len(produced.files), "consumed_files": len(consumed.files),
                  "events": hist.has_events, "faults": hist.has_faults,
                  "formats": sorted({p.suffix[1:] for p in produced.files + consumed.files}),
                  "bytes": size,
                  "drilled_blocks": res.get("drilled_blocks"), "drilled_rows": res.get("drilled_rows")},
        "warnings": warnings,
        "errors": [e.splitlines()[0] for e in run.errors],
        "grace_ms": grace_ms,
        "time_range_ms": [res.get("t0"), res.get("t1")],
        "spark": {"version": spark.version},
        "analysis_seconds": None,
    }
    extra = {"periods": hist.periods, "restores": state_cost.restore_spans(hist), "rounds": rounds, "rate": res.get("rate", []), "rate_bin_ms": res.get("rate_bin_ms"),
             "commits": hist.commits, "events": hist.events, "all_anomalies": anomalies, "no_owner": no_owner,
             "workload_stop_ms": history.workload_stop(hist)}
    return summary, extra


def compare(run_dirs, *, spark=None, master=None, remote=None, grace_ms=30_000, reanalyze=False, progress=None,
            out: Path | None = None) -> dict:
    """The table; with `out`, also written there as compare.json and compare.md (checked before any analysis)."""
    if out is not None:
        _check_compare_folder(Path(out))
    rows = []
    for rd in run_dirs:
        rd = Path(rd).resolve()
        if not rd.is_dir():
            raise InputError(f"{rd}: run directory does not exist" if not rd.exists() else f"{rd}: not a run directory")
        path = rd / "report" / "summary.json"
        if reanalyze or not path.exists():
            if progress:
                progress("analysing", str(rd))
            summary = analyze(rd, spark=spark, master=master, remote=remote, grace_ms=grace_ms)
        else:
            summary = read_summary(path)
        rows.append(row_for(rd, summary))
    table = {"columns": [{"key": k, "title": t} for k, t in COLUMNS], "runs": rows}
    if out is not None:
        write_table(Path(out), table)
    return table


def _check_compare_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file; --out names a folder for compare.json and compare.md")


def cell_figures(run_dir, partitions: list[tuple[str, int]], members: int, observe_ms: int, spark) -> dict:
    """A sweep cell's figures (analysis/figures/cell.py) over its run, analysed first."""
    return cell.figures_of(analyze(run_dir, spark=spark), Path(run_dir), partitions, members, observe_ms, spark)
