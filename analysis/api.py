"""analyze(run_dir): the checker. Reads only the run directory; writes report/summary.json and report/index.html."""
from __future__ import annotations

import json
import time
import traceback
from pathlib import Path

from . import checks as C
from . import figures, history, inputs, records
from .errors import InputError
from .spark import apply_runtime_conf, default_parallelism, get_session, is_started

SUMMARY_VERSION = 1
DEFAULT_GRACE_MS = 30_000
DEFAULT_MAX_EXAMPLES = 20
CHECK_NAMES = ("duplicate", "lost", "skip", "backwards", "commit_regression", "duplicate_over_budget",
               "unhealed_fault", "duplicate_write", "attribution", "rebalances")


class _Run:
    """State of one analysis: what ran, what was skipped, what crashed."""

    def __init__(self):
        self.checks: dict[str, dict] = {}
        self.errors: list[str] = []

    def skip(self, name, reason):
        self.checks[name] = {"status": "skipped", "reason": reason}

    def ran(self, name, **info):
        self.checks[name] = {"status": "ran", **info}

    def guarded(self, names, fn, *args):
        """Run fn; if it raises (anything but InputError), the named checks become 'crashed' (valid: unknown)."""
        try:
            return fn(*args)
        except InputError:
            raise
        except Exception as exc:
            text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            self.errors.append(f"{', '.join(names)}: {text}\n{traceback.format_exc()}")
            for name in names:
                self.checks[name] = {"status": "crashed", "error": text}
            return None


def analyze(run_dir, *, spark=None, master: str | None = None, remote: str | None = None,
            grace_ms: int = DEFAULT_GRACE_MS, protocol: str = "auto", max_examples: int = DEFAULT_MAX_EXAMPLES,
            engine: str = "auto", progress=None) -> dict:
    """Check one run directory (contract v1, DESIGN.md) and write ``report/summary.json`` and ``report/index.html``.

    Returns the summary dict. ``valid`` is True (no anomaly that breaks the guarantees), False (at least one
    lost, skip, backwards, commit_regression, duplicate_over_budget, duplicate_write or unhealed_fault), or
    "unknown" (a check crashed, or a duplicate's budget could not be decided). Duplicates alone do not make a
    run invalid: at-least-once delivery allows them; duplicate_over_budget says which ones it does not explain.

    ``grace_ms``: an anomaly is attributed to a fault when it happens between injection and heal + grace.
    ``protocol``: "auto" (from each member's ``started`` event detail), "eager" or "cooperative": how
    ``assigned`` events are read when rebuilding ownership. ``engine``: where the per-block checks run after
    the one Spark pass: "local" (the aggregate, ~64x smaller than the input, is collected and checked with
    numpy on the driver), "spark" (it stays in Spark: for inputs too big for the driver), "auto" (local
    below LOCAL_ENGINE_MAX_BYTES of input). ``progress(phase, detail)`` is called per phase.
    Raises :class:`InputError` for bad input (message names the file and the column).
    """
    t_start = time.monotonic()
    say = progress or (lambda phase, detail="": None)
    run_dir = Path(run_dir).resolve()
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: run directory does not exist")
    say("loading", str(run_dir))
    inputs.precheck(run_dir, "produced")
    inputs.precheck(run_dir, "consumed")
    hist = history.build(run_dir, protocol)
    if spark is None:
        if not is_started(master, remote):
            say("starting Spark", remote or master or "local[*]")
        spark = get_session(master, remote)
    apply_runtime_conf(spark)
    produced = inputs.load(spark, run_dir, "produced")
    consumed = inputs.load(spark, run_dir, "consumed")
    run = _Run()
    warnings = list(hist.warnings)
    size = produced.bytes + consumed.bytes
    saved = _tune(spark, size)
    scan = None
    try:
        say("scanning", f"{len(produced.files)} produced + {len(consumed.files)} consumed file(s), {size / 1e6:.1f} MB")
        members = hist.members_with_events
        bounds = history.boundaries(hist.periods) if hist.has_events else []
        direct = len(bounds) > records.MAX_CASE_BOUNDARIES
        if direct:  # too many ownership boundaries for the CASE tree: join every record to its period
            join_rows = history.join_table(hist.periods) if hist.has_events else None
            consumed_e = records.with_period(spark, consumed.df, join_rows, members).withColumnRenamed("period", "epoch")
            emap = None
        else:
            consumed_e = records.with_epoch(consumed.df, bounds)
            emap = history.epoch_map(hist.periods, bounds)
        if engine == "auto":
            engine = "local" if size < LOCAL_ENGINE_MAX_BYTES else "spark"
        if engine == "local":  # collect the (~64x smaller) aggregate once; derive everything with numpy
            from .local import Groups
            table = None
            pairs = inputs.name_candidates(produced) if size >= HASH_NAMES_MIN_BYTES else None
            pairs = pairs | cpairs if pairs is not None and (cpairs := inputs.name_candidates(consumed)) is not None else None
            if pairs:  # all Parquet, names known from the footers: hash them into one key
                table = records.unhash(records.unpack(records.aggregate(produced.df, consumed_e, hashed=True), hashed=True)
                                       .toArrow(), records.name_hashes(spark, pairs))
            if table is None:  # JSON, or a hash nobody could name (should not happen): string keys
                table = records.unpack(records.aggregate(produced.df, consumed_e)).toArrow()
            scan = Groups(table, emap, members, direct)
        else:
            scan = records.scan(spark, produced.df, consumed_e, emap, members, direct)
        totals = scan.totals()  if engine == "local" else scan.totals
        if totals.get(records.BAD_PRODUCED):
            warnings += inputs.diagnose(produced)
        if totals.get(records.BAD_CONSUMED):
            warnings += inputs.diagnose(consumed)
        say("checks", f"{engine} engine")
        result = _checks(spark, run, scan, totals, hist, consumed, produced.df, grace_ms, engine)
    except InputError:
        if engine == "spark":
            records.unpersist(scan)
        raise
    except Exception as exc:  # the scan itself failed: nothing is known
        run.errors.append(f"scan: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        for name in CHECK_NAMES:
            run.checks[name] = {"status": "crashed", "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
        result = None
    finally:
        _restore(spark, saved)
    if engine == "spark":
        records.unpersist(scan)
    say("report", "")
    summary, extra = _summary(run_dir, run, result, hist, produced, consumed, grace_ms, max_examples, warnings, spark)
    summary["analysis_seconds"] = round(time.monotonic() - t_start, 3)
    from . import report
    try:
        report.write(run_dir, summary, extra, run.errors)
    except Exception as exc:  # a broken page must not cost the verdict: write a bare one
        run.errors.append(f"report: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        summary["errors"] = [e.splitlines()[0] for e in run.errors]
        report.write_bare(run_dir, summary, run.errors)
    summary["analysis_seconds"] = round(time.monotonic() - t_start, 3)
    (run_dir / "report" / "summary.json").write_text(json.dumps(summary, indent=2, default=_json_default) + "\n")
    return summary


SMALL_INPUT_BYTES = 64 << 20
EXACT_ORDER_MAX_ROWS = 250_000  # up to: every record's log position is read for the backwards check (+0.5 s at 100k)
LOCAL_ENGINE_MAX_BYTES = 4 << 30
HASH_NAMES_MIN_BYTES = SMALL_INPUT_BYTES  # below: the extra tiny query for the names costs more than it saves


def _tune(spark, size: int) -> dict:
    """Per-analysis settings (restored afterwards): few shuffle partitions; for small inputs no adaptive
    re-planning and no whole-stage code generation, whose fixed costs dominate a small run."""
    conf = {"spark.sql.shuffle.partitions": str(max(1, min(2 * default_parallelism(spark), size // (32 << 20) + 1)))}
    if size < SMALL_INPUT_BYTES:
        conf.update({"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"})
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


def _json_default(o):
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


def _checks(spark, run: _Run, scan, totals, hist, consumed, produced_df, grace_ms, engine) -> dict:
    out: dict = {"anomalies": [], "counts": {}, "engine": engine}
    ctx = C.Context.build(hist)
    out["produced_ok"] = (totals.get(records.PRODUCED) or (0,))[0]
    out["produced_fail"] = (totals.get(records.FAILED) or (0,))[0]
    out["produced_info"] = (totals.get(records.INFO) or (0,))[0]
    out["consumed_rows"] = (totals.get(records.CONSUMED) or (0,))[0]
    tmins = [v[2] for k, v in totals.items() if k <= records.PRODUCED and v[2] is not None]
    tmaxs = [v[3] for k, v in totals.items() if k <= records.PRODUCED and v[3] is not None]
    out["t0"] = min(tmins + [e.ts for e in hist.events] + [f.injected_at_ms for f in hist.faults]) if (tmins or hist.events or hist.faults) else 0
    out["t1"] = max(tmaxs + [e.ts for e in hist.events] + [f.healed_at_ms or f.injected_at_ms for f in hist.faults]) if (tmaxs or hist.events or hist.faults) else 0
    consumed_t1 = (totals.get(records.CONSUMED) or (0, 0, None, None))[3]
    out["observe_end"] = consumed_t1 if consumed_t1 is not None else out["t1"]

    has_events = hist.has_events
    span = max(1, out["observe_end"] - out["t0"]) if out["t0"] else 1
    bin_ms = max(100, _nice_bin(span // 200))
    out["rate_bin_ms"] = bin_ms
    if engine == "local":
        scan.build_blocks()
        got = {"stats": scan.partition_stats(), "dirty": scan.dirty_blocks(), "groups": scan.duplicate_groups(),
               "summaries": scan.period_summaries(), "rate": scan.rate(out["t0"], bin_ms)}
        if has_events:
            got["flags"] = scan.ownership_flags()
    else:
        records.build_blocks(scan)
        queries = {"stats": records.q_partition_stats(scan), "dirty": records.q_dirty_blocks(scan),
                   "groups": records.q_duplicate_groups(scan), "summaries": records.q_period_summaries(scan),
                   "rate": records.q_rate(scan, out["t0"], bin_ms)}
        if has_events:
            queries["flags"] = records.q_ownership_flags(scan)
        got = records.collect_many(queries)  # one Spark job for all of them
    stats = sorted(got["stats"], key=lambda r: (r["topic"], r["partition"]))
    out["partitions"] = stats
    out["consumed_distinct"] = sum(r["consumed_distinct"] or 0 for r in stats)
    out["extra_deliveries"] = sum(r["extra"] or 0 for r in stats)
    out["lost_total"] = sum(r["lost"] or 0 for r in stats)
    out["unacked"] = sum(r["unacked"] or 0 for r in stats)
    out["produced_repeats"] = sum(r["produced_repeats"] or 0 for r in stats)
    dirty, groups, summaries = got["dirty"], got["groups"], got["summaries"]
    out["period_summaries"] = summaries
    out["rate"] = sorted((int(r["bin"]), int(r["n"])) for r in got["rate"])
    flags = got.get("flags", [])
    gaps = [r for r in flags if r["gap"]]

    # record-level rows, only for the blocks the counts could not settle; one more job when needed
    need = set(C.duplicate_blocks_needing_rows(ctx, groups)) if groups else set()
    for r in flags:
        if r["repeat"] or r["order_in"] or r["order_across"]:
            need.add((r["topic"], r["partition"], r["b"]))
            if r["prev_b"] is not None:
                need.add((r["topic"], r["partition"], r["prev_b"]))
    more = {}
    got = {}
    if gaps:
        if engine == "local":
            got["gap_bits"] = scan.gap_bits(gaps)
        else:
            more["gap_bits"] = records.q_gap_skips(spark, scan, gaps)
    if need:
        more["rows"] = records.q_drill_down(consumed, sorted(need))
        if engine == "local":
            got["known"] = scan.known(sorted(need))
        else:
            more["known"] = records.q_known(spark, scan, sorted(need))
    # duplicate_write: a producer-side duplicate always leaves a consumed copy nobody acked ok (the attempt
    # whose acknowledgement was lost), so only the producer_id/seq of such records are looked up
    can_write_check = consumed.has("producer_id") and consumed.has("seq")
    unacked_bits = {(r["topic"], r["partition"], r["b"]): r["cmask"] & ~r["pmask"] for r in dirty if r.get("unacked")}
    if can_write_check and unacked_bits:
        more["unacked"] = records.q_unacked_rows(consumed, sorted(unacked_bits))
    if more:
        got.update(run.guarded(("duplicate", "backwards", "skip", "duplicate_write"), records.collect_many, more) or {})
    if can_write_check and "duplicate_write" not in run.checks:
        def write_check():
            pairs = {(r["producer_id"], r["seq"]) for r in got.get("unacked", [])
                     if unacked_bits.get((r["topic"], r["partition"], r["offset"] >> 6), 0) >> (r["offset"] & 63) & 1}
            copies = records.collect_many({"c": records.q_write_copies(spark, produced_df, consumed.df, pairs)})["c"] if pairs else []
            return C.duplicate_writes(copies)
        res = run.guarded(("duplicate_write",), write_check)
        if res is not None:
            out["anomalies"] += res
            out["counts"]["duplicate_write"] = len(res)
            run.ran("duplicate_write", count=len(res), unacked_records=out["unacked"])
    elif not can_write_check:
        run.skip("duplicate_write", "no producer_id/seq columns in consumed/")
    gap_bits = got.get("gap_bits", [])
    rows = got.get("rows", [])
    history.assign_periods(rows, hist.periods, hist.members_with_events, has_events)
    known = {(r["topic"], r["partition"], r["b"]): r["known"] for r in got.get("known", [])}
    out["drilled_blocks"] = len(need)
    out["drilled_rows"] = len(rows)

    # duplicates and their budget
    res = run.guarded(("duplicate", "duplicate_over_budget"), C.duplicates, ctx, groups, rows)
    if res is not None:
        dup, over, st = res
        if st["extra_deliveries"] != out["extra_deliveries"]:
            run.guarded(("duplicate", "duplicate_over_budget"), _raise,
                        f"block counts say {out['extra_deliveries']} extra deliveries, records say {st['extra_deliveries']}")
        else:
            out["anomalies"] += dup
            out["counts"]["duplicate"] = st["duplicated_offsets"]
            out["duplicated_offsets"] = st["duplicated_offsets"]
            run.ran("duplicate", count=st["duplicated_offsets"], extra_deliveries=st["extra_deliveries"])
            if not has_events:
                run.skip("duplicate_over_budget", "no events")
            else:
                out["anomalies"] += over
                out["counts"]["duplicate_over_budget"] = st["over_budget_offsets"]
                info = {"count": st["over_budget_offsets"],
                        "within_budget_offsets": st["duplicated_offsets"] - st["over_budget_offsets"] - st["unknown_budget_offsets"]}
                if st["unknown_budget_offsets"]:
                    run.checks["duplicate_over_budget"] = {"status": "unknown", "count": st["over_budget_offsets"],
                                                           "undecided_offsets": st["unknown_budget_offsets"],
                                                           "reason": "some members logged no events"}
                else:
                    run.ran("duplicate_over_budget", **info)

    res = run.guarded(("lost",), C.lost, ctx, dirty)
    if res is not None:
        lost, n = res
        out["anomalies"] += lost
        out["counts"]["lost"] = n
        out["lost_records"] = n
        run.ran("lost", count=n)

    if not has_events:
        for name in ("skip", "backwards", "commit_regression"):
            run.skip(name, "no events")
    else:
        if "skip" not in run.checks:
            res = run.guarded(("skip",), C.skips, ctx, flags, gaps, gap_bits, rows, known)
            if res is not None:
                out["anomalies"] += res[0]
                out["counts"]["skip"] = res[1]
                run.ran("skip", count=res[1])
        if "backwards" not in run.checks:
            exact = out["consumed_rows"] <= EXACT_ORDER_MAX_ROWS
            if exact:
                res = run.guarded(("backwards",), lambda: C.backwards_in_log_order(
                    ctx, records.q_log_order(consumed).toArrow(), hist))
            else:
                res = run.guarded(("backwards",), C.backwards, ctx, flags, rows)
            if res is not None:
                out["anomalies"] += res[0]
                out["counts"]["backwards"] = res[1]
                run.ran("backwards", count=res[1], order="every record" if exact else "64-offset blocks")
        res = run.guarded(("commit_regression",), C.commit_regressions, ctx)
        if res is not None:
            out["anomalies"] += res
            out["counts"]["commit_regression"] = len(res)
            run.ran("commit_regression", count=len(res), commits=sum(1 for c in hist.commits if c.ok))

    if hist.has_faults:
        res = C.unhealed_faults(hist)
        out["anomalies"] += res
        out["counts"]["unhealed_fault"] = len(res)
        run.ran("unhealed_fault", count=len(res))
        run.guarded(("attribution",), C.attribute, out["anomalies"], hist, grace_ms)
        if "attribution" not in run.checks:
            run.ran("attribution", grace_ms=grace_ms)
    else:
        run.skip("unhealed_fault", "no faults.jsonl")
        run.skip("attribution", "no faults.jsonl")
        for a in out["anomalies"]:
            a.setdefault("fault_ids", [])

    if has_events and "rebalances" not in run.checks:
        def rebalance_figures():
            rnds = figures.rounds(hist)
            parts = [(r["topic"], r["partition"]) for r in stats]
            windows = figures.no_owner_windows(hist, parts, out["observe_end"])
            alive = figures.revocations_while_alive(hist)
            recovery = figures.fault_recovery(hist, rnds, windows, grace_ms, out["observe_end"])
            outside = [s for s in summaries if s["period"] == records.OUTSIDE_PERIOD]
            return {"rounds": rnds, "no_owner": windows, "revocations_while_alive": alive, "recovery": recovery,
                    "consumed_outside_ownership": sum(s["n"] for s in outside),
                    "protocols": hist.protocols}
        fig = run.guarded(("rebalances",), rebalance_figures)
        if fig is not None:
            out["figures"] = fig
            run.ran("rebalances", count=len(fig["rounds"]))
    elif not has_events:
        run.skip("rebalances", "no events")

    return out


def _raise(msg):
    raise AssertionError(msg)


def _nice_bin(ms: int) -> int:
    for step in (100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000):
        if ms <= step:
            return step
    return 3_600_000 * (ms // 3_600_000 + 1)


def _verdict(checks: dict, counts: dict) -> bool | str:
    if any(counts.get(t, 0) > 0 for t in C.INVALID_TYPES):
        return False
    if any(c["status"] in ("crashed", "unknown") for c in checks.values()):
        return "unknown"
    return True


def _summary(run_dir, run: _Run, res, hist, produced, consumed, grace_ms, max_examples, warnings, spark):
    checks = {name: run.checks.get(name, {"status": "crashed", "error": "not reached"}) for name in CHECK_NAMES}
    res = res or {}
    counts = {t: res.get("counts", {}).get(t, 0) for t in C.TYPES}
    anomalies = sorted(res.get("anomalies", []), key=lambda a: ((a["time_ms"][0] or 0), a["type"]))
    examples, ranges = [], {}
    for t in C.TYPES:
        of_type = [a for a in anomalies if a["type"] == t]
        ranges[t] = len(of_type)
        examples += of_type[:max_examples]
    examples.sort(key=lambda a: ((a["time_ms"][0] or 0), C.TYPES.index(a["type"])))
    fig = res.get("figures") or {}
    faults = []
    for f in hist.faults:
        attributed = {}
        for a in anomalies:
            if f.id in a.get("fault_ids", []) and a["type"] != "unhealed_fault":
                attributed[a["type"]] = attributed.get(a["type"], 0) + a["count"]
        rec = (fig.get("recovery") or {}).get(f.id, {})
        faults.append({"id": f.id, "kind": f.kind, "target": f.target, "injected_at_ms": f.injected_at_ms,
                       "healed_at_ms": f.healed_at_ms, "params": f.params,
                       "duration_ms": None if f.healed_at_ms is None else f.healed_at_ms - f.injected_at_ms,
                       "anomalies": attributed, "rebalances": rec.get("rebalances"),
                       "time_to_stable_ms": rec.get("time_to_stable_ms")})
    rounds = fig.get("rounds") or []
    no_owner = fig.get("no_owner") or {}
    valid = _verdict(checks, counts) if res else "unknown"
    summary = {
        "summary_version": SUMMARY_VERSION,
        "run_dir": str(run_dir),
        "valid": valid,
        "produced_records": res.get("produced_ok"),
        "consumed_rows": res.get("consumed_rows"),
        "duplicated_offsets": res.get("duplicated_offsets"),
        "duplicate_extra_deliveries": res.get("extra_deliveries"),
        "lost_records": res.get("lost_records"),
        "anomalies": examples,
        "anomaly_counts": counts,
        "anomaly_ranges": ranges,
        "anomalies_capped_at": max_examples,
        "count_units": C.COUNT_UNITS,
        "rebalances": len(rounds) if hist.has_events and fig else None,
        "faults": faults,
        "checks": checks,
        "produced_by_status": {"ok": res.get("produced_ok"), "fail": res.get("produced_fail"), "info": res.get("produced_info")},
        "consumed_distinct": res.get("consumed_distinct"),
        "consumed_unacked": res.get("unacked"),
        "produced_repeated_offsets": res.get("produced_repeats"),
        "rebalance_figures": None if not fig else {
            "rounds": [{k: r[k] for k in ("index", "generation", "start_ms", "end_ms", "members")} for r in rounds],
            "no_owner_total_ms": no_owner.get("total_ms"), "no_owner_longest_ms": no_owner.get("longest_ms"),
            "no_owner_by_partition": [{k: w[k] for k in ("topic", "partition", "total_ms", "windows")} for w in no_owner.get("partitions", [])],
            "revocations_while_alive": fig.get("revocations_while_alive"),
            "consumed_outside_ownership": fig.get("consumed_outside_ownership"),
            "protocols": fig.get("protocols"),
        },
        "partitions": [{k: r[k] for k in ("topic", "partition", "produced", "consumed_rows", "consumed_distinct",
                                          "extra", "lost", "unacked")} for r in res.get("partitions", [])],
        "members": sorted({s["member"] for s in res.get("period_summaries", [])} | set(hist.members_with_events)),
        "input": {"produced_files": len(produced.files), "consumed_files": len(consumed.files),
                  "events": hist.has_events, "faults": hist.has_faults,
                  "formats": sorted({p.suffix[1:] for p in produced.files + consumed.files}),
                  "bytes": produced.bytes + consumed.bytes,
                  "drilled_blocks": res.get("drilled_blocks"), "drilled_rows": res.get("drilled_rows")},
        "warnings": warnings,
        "errors": [e.splitlines()[0] for e in run.errors],
        "grace_ms": grace_ms,
        "time_range_ms": [res.get("t0"), res.get("t1")],
        "spark": {"version": spark.version, "engine": res.get("engine")},
        "analysis_seconds": None,
    }
    extra = {"periods": hist.periods, "rounds": rounds, "rate": res.get("rate", []), "rate_bin_ms": res.get("rate_bin_ms"),
             "commits": hist.commits, "events": hist.events, "all_anomalies": anomalies, "no_owner": no_owner}
    return summary, extra
