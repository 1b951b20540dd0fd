"""report/index.html: one self-contained page (inline CSS and SVG, no script, no network)."""
from __future__ import annotations

import json
from pathlib import Path

from analysis.checks import REGISTRY
from analysis.pages.report_group import FOLD_ABOVE, esc, group_view, time_ticks

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
           "#bab0ac", "#e15759", "#86bcb6", "#d37295"]
TYPE_COLOR = {name: c.color for name, c in REGISTRY.items()}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.verdict{padding:14px 18px;border-radius:6px;color:#fff;font-size:18px;font-weight:600}
.valid{background:#2e7d32}.invalid{background:#c62828}.unknown{background:#8d6e00}
.sub{font-size:13px;font-weight:400;opacity:.9}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;margin:12px 0}
.fig{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:8px 10px}
.fig b{display:block;font-size:20px}.fig span{font-size:12px;color:#666}
.fig.bad b{color:#c62828}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e0e0e0;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.tag{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
.muted{color:#777}.small{font-size:12px}
svg{background:#fff;border:1px solid #e0e0e0;border-radius:6px}
svg text{font:11px system-ui,sans-serif;fill:#333}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;border-radius:2px}
pre{background:#fff;border:1px solid #e0e0e0;padding:8px;overflow:auto;font-size:12px}
.bars{display:flex;align-items:flex-end;gap:2px;height:58px}
.bar{display:flex;flex-direction:column;align-items:center;font-size:10px}.bar b{display:block;width:14px;background:#4e79a7}
#group p{margin:4px 0}#group svg{display:block}
details>summary{cursor:pointer;font-weight:600;margin:24px 0 8px}
"""


e = esc  # html-escaped text, None as empty


def fmt_int(x) -> str:
    return "–" if x is None else f"{x:,}"


def write(run_dir: Path, summary: dict, extra: dict, errors: list[str]) -> Path:
    out = run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(render(summary, extra, errors), encoding="utf-8")
    return path


def write_bare(run_dir: Path, summary: dict, errors: list[str]) -> Path:
    out = run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    word = {True: "VALID", False: "INVALID"}.get(summary["valid"], "UNKNOWN")
    body = (f"<!doctype html><meta charset=utf-8><title>kafka-chaos report: {word}</title><h1 id=verdict>{word}</h1>"
            f"<p>The full report could not be rendered; the numbers are in summary.json.</p>"
            f"<pre>{e(json.dumps({k: summary.get(k) for k in ('produced_records', 'consumed_rows', 'duplicated_offsets', 'duplicate_extra_deliveries', 'lost_records', 'anomaly_counts', 'rebalances')}, indent=2))}</pre>"
            + "".join(f"<pre>{e(err)}</pre>" for err in errors))
    path = out / "index.html"
    path.write_text(body, encoding="utf-8")
    return path


def render(s: dict, x: dict, errors: list[str]) -> str:
    t0 = (s.get("time_range_ms") or [0])[0] or 0
    rel = lambda t: "–" if t is None else f"{(t - t0) / 1000:.1f}s"  # noqa: E731
    valid = s["valid"]
    cls = {True: "valid", False: "invalid"}.get(valid, "unknown")
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    counts = s["anomaly_counts"]
    bad = [f"{counts[t]:,} {t}" for t in REGISTRY if counts.get(t)]
    why = ", ".join(bad) if bad else "no anomalies"
    if valid == "unknown":
        why += "; " + ", ".join(f"{k} {v['status']}" for k, v in s["checks"].items() if v["status"] in ("crashed", "unknown"))
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>kafka-chaos report: {word}</title>",
             f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{CSS}</style></head><body><main>",
             f"<h1>kafka-chaos analysis</h1><div class='verdict {cls}' id=verdict data-valid='{e(json.dumps(valid))}'>{word}"
             f"<div class=sub>{e(why)}</div></div>",
             f"<p class='muted small'>{e(s['run_dir'])} · {e(rel(s['time_range_ms'][1]))} of history · analysed in "
             f"{s.get('analysis_seconds') or 0:.1f}s with Spark {e(s['spark']['version'])} · grace {s['grace_ms']} ms</p>"]
    figs = [("produced_records", "acked records (ok)", False), ("consumed_rows", "consumed rows", False),
            ("duplicated_offsets", "duplicated offsets", False), ("duplicate_extra_deliveries", "extra deliveries", False),
            ("lost_records", "lost records", True), ("lost_within_budget_records", "lost within budget", False),
            ("unseen_records", "unseen (still in Kafka)", False), ("rebalances", "rebalances", False)]
    parts.append("<section id=figures class=figs>")
    for key, label, alarm in figs:
        v = s.get(key)
        parts.append(f"<div class='fig{' bad' if alarm and v else ''}' id='fig-{key}'><b>{fmt_int(v)}</b><span>{e(label)}</span></div>")
    rf = s.get("rebalance_figures") or {}
    if rf:
        parts.append(f"<div class=fig><b>{(rf.get('no_owner_total_ms') or 0) / 1000:.1f}s</b><span>partition-time with no owner</span></div>")
    for t in (name for name, c in REGISTRY.items() if c.invalidates and name != "lost"):
        if s["checks"].get(t, {}).get("status") == "ran":
            parts.append(f"<div class='fig{' bad' if counts.get(t) else ''}'><b>{fmt_int(counts.get(t))}</b><span>{e(t)}</span></div>")
    parts.append(f"<div class=fig><b>{len(s['faults'])}</b><span>faults</span></div></section>")

    parts.append(group_view(s, x, t0))
    parts.append(_anomaly_table(s, rel))
    parts.append(_folded(_timeline(s, x, t0), "timeline", _partition_count(s, x)))
    parts.append(_rate(s, x, t0))
    parts.append(_commits(s, x, t0))
    parts.append(_transactions(s.get("transactions")))
    parts.append(_faults(s, rel))
    parts.append(_checks(s))
    if rf:
        parts.append(_rebalances(rf, rel))
    parts.append(_folded(_partitions(s), "partitions", len(s["partitions"])))
    if s.get("warnings"):
        parts.append("<h2>Input warnings</h2><ul>" + "".join(f"<li>{e(w)}</li>" for w in s["warnings"]) + "</ul>")
    if errors:
        parts.append("<h2 id=errors>Check errors</h2>" + "".join(f"<pre>{e(err)}</pre>" for err in errors))
    parts.append("<p class='muted small'>Counts are exact; the anomaly list shows at most "
                 f"{s['anomalies_capped_at']} ranges per type. Full numbers: report/summary.json.</p></main></body></html>")
    return "\n".join(parts)


def _partition_count(s, x) -> int:
    return len({(p.topic, p.partition) for p in x.get("periods") or []} | {(r["topic"], r["partition"]) for r in s["partitions"]})


def _folded(section: str, name: str, partitions: int) -> str:
    """A per-partition section, folded when the run has more partitions than a screen reads (its heading becomes
    the fold's summary)."""
    if partitions <= FOLD_ABOVE or not section.startswith("<h2>"):
        return section
    heading, body = section[4:].split("</h2>", 1)
    return (f"<details id={name}-fold><summary>{heading} ({partitions:,} partitions: open to see each one)</summary>"
            f"{body}</details>")


def _anomaly_table(s, rel) -> str:
    rows = []
    for a in s["anomalies"]:
        offs = a.get("offsets")
        offs = "–" if not offs else (str(offs[0]) if offs[0] == offs[1] else f"{offs[0]}–{offs[1]}")
        tp = "–" if a.get("topic") is None else f"{a['topic']}:{a['partition']}"
        detail = a.get("reason") or a.get("detail") or ""
        if a["type"] in ("backwards", "commit_regression") and a.get("from_offset") is not None:
            detail = f"{a['from_offset']} → {a['to_offset']} " + detail
        if a["type"] == "unhealed_fault":
            detail = f"{a.get('kind')} on {a.get('target')}"
        if a["type"] == "duplicate_write":
            detail = f"producer {a.get('producer_id')} seq {a.get('seq')} stored at {', '.join(a.get('copies') or [])}"
        rows.append(f"<tr class='anomaly {e(a['type'])}'><td><span class=tag style='background:{TYPE_COLOR.get(a['type'], '#555')}'>"
                    f"{e(a['type'])}</span></td><td>{e(tp)}</td><td>{e(offs)}</td><td class=num>{fmt_int(a.get('count'))}</td>"
                    f"<td>{e(', '.join(a.get('members') or []))}</td><td>{e(', '.join(map(str, a.get('generations') or [])))}</td>"
                    f"<td>{e(rel(a['time_ms'][0]))}</td><td>{e(', '.join(a.get('fault_ids') or []))}</td><td class=small>{e(detail)}</td></tr>")
    counts = s["anomaly_counts"]
    head = ", ".join(f"{t}: {counts[t]:,}" for t in REGISTRY if counts.get(t)) or "none"
    if not rows:
        return f"<h2>Anomalies</h2><p id=anomalies-none>No anomalies found ({e(head)}).</p><table id=anomalies hidden></table>"
    return ("<h2>Anomalies</h2><p class=small>Exact counts: " + e(head) + "</p><table id=anomalies><thead><tr><th>type</th><th>partition</th>"
            "<th>offsets</th><th>count</th><th>members</th><th>generations</th><th>at</th><th>faults</th><th>detail</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _axis(x0, x1, width, left, top, height, t0, t1):
    return time_ticks(t0, t1, left, width, top, height)


def _fault_bands(s, t0, t1, left, width, top, height):
    span = max(1, t1 - t0)
    out = []
    for f in s["faults"]:
        a = f["injected_at_ms"]
        b = f["healed_at_ms"] if f["healed_at_ms"] is not None else t1
        xa = left + max(0, a - t0) / span * width
        xb = left + min(span, max(0, b - t0)) / span * width
        out.append(f"<rect class=fault x={xa:.1f} y={top} width={max(1.5, xb - xa):.1f} height={height} fill='#d62728' "
                   f"fill-opacity=.12><title>fault {e(f['id'])}: {e(f['kind'])} on {e(f['target'])}</title></rect>")
    return "".join(out)


def _timeline(s, x, t0) -> str:
    periods = x.get("periods") or []
    if not periods:
        return "<h2>Ownership timeline</h2><p class=muted>skipped: no events</p>"
    t1 = max([s["time_range_ms"][1] or t0] + [p.start for p in periods])
    tps = sorted({(p.topic, p.partition) for p in periods} | {(r["topic"], r["partition"]) for r in s["partitions"]})
    members = sorted({p.member for p in periods})
    color = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(members)}
    left, width, lane = 110, 1040, 18
    top = 10
    height = lane * len(tps)
    span = max(1, t1 - t0)
    X = lambda t: left + max(0, min(span, t - t0)) / span * width  # noqa: E731
    out = ["<h2>Ownership timeline</h2><div class=legend>" + "".join(f"<span><i style='background:{color[m]}'></i>{e(m)}</span>" for m in members)
           + "<span><i style='background:#d62728;opacity:.25'></i>fault window</span><span><i style='background:#555'></i>rebalance</span>"
           + ("<span><i style='background:repeating-linear-gradient(45deg,#000 0 2px,#fff 2px 4px)'></i>restoring its "
              "state</span>" if x.get("restores") else "") + "</div>",
           f"<svg id=timeline width={left + width + 20} height={top + height + 24} role=img aria-label='partition owners over time'>",
           "<defs><pattern id=restoring width=4 height=4 patternUnits=userSpaceOnUse patternTransform='rotate(45)'>"
           "<rect width=2 height=4 fill='#000' opacity=.55></rect></pattern></defs>",
           _axis(0, 0, width, left, top, height, t0, t1), _fault_bands(s, t0, t1, left, width, top, height)]
    row = {tp: i for i, tp in enumerate(tps)}
    for i, tp in enumerate(tps):
        out.append(f"<text x={left - 6} y={top + i * lane + 13} text-anchor=end>{e(tp[0])}:{tp[1]}</text>")
    for p in periods:
        y = top + row[(p.topic, p.partition)] * lane + 3
        end = p.end if p.end < 2**61 else t1
        out.append(f"<rect class=owner x={X(p.start):.1f} y={y} width={max(1, X(end) - X(p.start)):.1f} height={lane - 6} "
                   f"fill='{color[p.member]}'><title>{e(p.member)} owns {e(p.topic)}:{p.partition} "
                   f"gen {e(p.generation)} {(p.start - t0) / 1000:.1f}s–{(end - t0) / 1000:.1f}s ({e(p.end_kind or 'open')})</title></rect>")
    for r in x.get("restores") or []:  # a stateful member restoring a partition (paused) before it processes it
        if (r["topic"], r["partition"]) not in row:
            continue
        y = top + row[(r["topic"], r["partition"])] * lane + 3
        end = r["end_ms"] if r["end_ms"] is not None else t1
        what = "aborted" if r["aborted"] else "never ended" if r["end_ms"] is None else f"{r['records']} records"
        out.append(f"<rect class=restore x={X(r['start_ms']):.1f} y={y} width={max(1, X(end) - X(r['start_ms'])):.1f} "
                   f"height={lane - 6} fill='url(#restoring)'><title>{e(r['member'])} restores {e(r['topic'])}:"
                   f"{r['partition']} {(r['start_ms'] - t0) / 1000:.1f}s–{(end - t0) / 1000:.1f}s ({what})</title></rect>")
    for r in x.get("rounds") or []:
        out.append(f"<line class=rebalance x1={X(r['start_ms']):.1f} x2={X(r['start_ms']):.1f} y1={top} y2={top + height} "
                   f"stroke='#555' stroke-dasharray='3,2'><title>rebalance {r['index']} (gen {e(r['generation'])})</title></line>")
    for a in x.get("all_anomalies") or []:
        if a.get("topic") is None or (a["topic"], a["partition"]) not in row or a["type"] == "duplicate":
            continue
        y = top + row[(a["topic"], a["partition"])] * lane + lane / 2
        px = X(a["time_ms"][0])
        out.append(f"<path class=marker d='M{px:.1f},{y - 6:.1f} l5,9 l-10,0 z' fill='{TYPE_COLOR.get(a['type'], '#000')}' stroke='#fff' "
                   f"stroke-width=.8><title>{e(a['type'])} {a['offsets']} ×{a['count']}</title></path>")
    out.append("</svg>")
    return "".join(out)


def rate_steps(rate: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The corners of a step line over sparse (bin, count) pairs: each bin is flat across its width, and a bin
    with no record is drawn at zero (the pairs leave it out), so a freeze shows as a drop, not a ramp."""
    counts = dict(rate)
    out = []
    for b in range(min(counts), max(counts) + 1):
        n = counts.get(b, 0)
        out += [(b, n), (b + 1, n)]
    return out


def _rate(s, x, t0) -> str:
    rate = x.get("rate") or []
    bin_ms = x.get("rate_bin_ms") or 1000
    if not rate:
        return "<h2>Consumption rate</h2><p class=muted>no consumed records</p>"
    t1 = max(s["time_range_ms"][1] or t0, t0 + (rate[-1][0] + 1) * bin_ms)
    left, width, height, top = 110, 1040, 120, 10
    span = max(1, t1 - t0)
    peak = max(n for _, n in rate) * 1000 / bin_ms
    pts = []
    for b, n in rate_steps(rate):
        px = left + b * bin_ms / span * width
        py = top + height - (n * 1000 / bin_ms) / peak * height
        pts.append(f"{px:.1f},{py:.1f}")
    return (f"<h2>Consumption rate</h2><svg id=rate width={left + width + 20} height={top + height + 24} role=img aria-label='records per second'>"
            + _axis(0, 0, width, left, top, height, t0, t1) + _fault_bands(s, t0, t1, left, width, top, height)
            + f"<text x={left - 6} y={top + 10} text-anchor=end>{peak:,.0f}/s</text><text x={left - 6} y={top + height} text-anchor=end>0</text>"
            + f"<polyline fill=none stroke='#4e79a7' stroke-width=1.5 points='{' '.join(pts)}'/></svg>"
            + f"<p class='muted small'>records consumed per second ({bin_ms} ms bins), fault windows shaded</p>")


def _commits(s, x, t0) -> str:
    commits = [c for c in (x.get("commits") or []) if c.ok]
    if not commits:
        return "<h2>Commits</h2><p class=muted>skipped: no commits in the events</p>" if x.get("periods") else ""
    by_tp = {}
    for c in commits:
        by_tp.setdefault((c.topic, c.partition), []).append(c)
    t1 = max(s["time_range_ms"][1] or t0, max(c.ts for c in commits))
    left, width, height, top = 110, 1040, 160, 10
    span = max(1, t1 - t0)
    top_off = max(c.offset for c in commits) or 1
    out = [f"<h2>Commits</h2><svg id=commits width={left + width + 20} height={top + height + 24} role=img aria-label='committed offsets'>",
           _axis(0, 0, width, left, top, height, t0, t1), _fault_bands(s, t0, t1, left, width, top, height),
           f"<text x={left - 6} y={top + 10} text-anchor=end>{top_off:,}</text><text x={left - 6} y={top + height} text-anchor=end>0</text>"]
    regressions = {(a["topic"], a["partition"], a["time_ms"][1]) for a in x.get("all_anomalies") or [] if a["type"] == "commit_regression"}
    for i, (tp, cs) in enumerate(sorted(by_tp.items())):
        cs.sort(key=lambda c: (c.ts, c.line))
        step = max(1, len(cs) // 400)
        keep = [c for j, c in enumerate(cs) if j % step == 0 or (tp[0], tp[1], c.ts) in regressions or j == len(cs) - 1]
        pts = " ".join(f"{left + (c.ts - t0) / span * width:.1f},{top + height - c.offset / top_off * height:.1f}" for c in keep)
        out.append(f"<polyline fill=none stroke='{PALETTE[i % len(PALETTE)]}' stroke-width=1.2 points='{pts}'><title>{e(tp[0])}:{tp[1]}</title></polyline>")
    for (topic, part, ts) in regressions:
        c = next((c for c in by_tp.get((topic, part), []) if c.ts == ts), None)
        if c:
            out.append(f"<circle class=regression cx={left + (c.ts - t0) / span * width:.1f} cy={top + height - c.offset / top_off * height:.1f} r=4 "
                       f"fill='{TYPE_COLOR['commit_regression']}'><title>commit regression on {e(topic)}:{part}</title></circle>")
    out.append("</svg><p class='muted small'>committed offset per partition over time (successful commits)</p>")
    return "".join(out)


def _fault_kind(f) -> str:
    """The fault's label (its kind in summaries written before labels), and how often it acted when its hits
    count: `rpc Heartbeat error REBALANCE_IN_PROGRESS, 1 hit`."""
    what = f.get("label") or f["kind"]
    if "hits" not in f:
        return what
    return f"{what}, {f['hits']} hit{'' if f['hits'] == 1 else 's'}"


def _faults(s, rel) -> str:
    if not s["faults"]:
        return "<h2>Faults</h2><p class=muted>" + ("none injected" if s["input"]["faults"] else "skipped: no faults.jsonl") + "</p>"
    rows = []
    for f in s["faults"]:
        att = ", ".join(f"{n:,} {t}" for t, n in f["anomalies"].items()) or "none"
        healed = rel(f["healed_at_ms"]) if f["healed_at_ms"] is not None else "<b style='color:#c62828'>never</b>"
        tts = "–" if f.get("time_to_stable_ms") is None else f"{f['time_to_stable_ms'] / 1000:.1f}s"
        rows.append(f"<tr><td>{e(f['id'])}</td><td>{e(_fault_kind(f))}</td><td>{e(f['target'])}</td><td>{e(rel(f['injected_at_ms']))}</td>"
                    f"<td>{healed if f['healed_at_ms'] is None else e(healed)}</td><td class=num>{fmt_int(f.get('rebalances'))}</td>"
                    f"<td class=num>{e(tts)}</td><td>{e(att)}</td></tr>")
    return ("<h2>Faults</h2><table id=faults><thead><tr><th>id</th><th>kind</th><th>target</th><th>injected</th><th>healed</th>"
            "<th>rebalances</th><th>time to stable</th><th>attributed anomalies</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _spread_ms(d: dict | None) -> str:
    return "–" if not d else f"{d['p50']:,.1f} / {d['p99']:,.1f} / {d['max']:,} ms (n {d['n']:,})"


def _transactions(t: dict | None) -> str:
    """A transactional run's transactions (analysis/figures/transactions.py); nothing for any other run."""
    if not t:
        return ""
    outcomes = ", ".join(f"{n:,} {k}" for k, n in sorted(t["by_outcome"].items())) or "none"
    readers = ", ".join(f"{k}: {r['rows']:,} read{'' if r['reached_end'] else ', stopped below the end'}"
                        for k, r in sorted(t["readers"].items())) or "none"
    rows = [("transactions", f"{t['transactions']:,}: {outcomes}"),
            ("records written / in committed transactions", f"{t['records_written']:,} / {t['records_committed']:,}"),
            ("commit_transaction, p50 / p99 / max", _spread_ms(t.get("commit_ms"))),
            ("read read_committed after the commit returned, p50 / p99 / max", _spread_ms(t.get("read_after_commit_ms"))),
            ("held back by the last stable offset (read_committed against read_uncommitted)", _spread_ms(t.get("held_back_ms"))),
            ("verified readers", readers)]
    return ("<h2 id=transactions>Transactions</h2><table id=transaction-figures><tbody>"
            + "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in rows) + "</tbody></table>")


def _checks(s) -> str:
    rows = []
    for name, c in s["checks"].items():
        detail = c.get("reason") or c.get("error") or _ambiguity(c)
        count = c.get("count")
        rows.append(f"<tr><td>{e(name)}</td><td>{e(c['status'].replace('_', ' '))}</td><td class=num>{fmt_int(count)}</td>"
                    f"<td class=small>{e(REGISTRY[name].unit if name in REGISTRY else '')}</td><td class=small>{e(detail)}</td></tr>")
    return ("<h2>Checks</h2><table id=checks><thead><tr><th>check</th><th>status</th><th>count</th><th>unit</th><th>note</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _ambiguity(c: dict) -> str:
    """What a check left unreported because only some reading of the operations known late or never supports it."""
    if not c.get("ambiguous") and not c.get("indeterminate_commits"):
        return ""
    examples = "; ".join(c.get("ambiguous_examples") or [])
    return (f"{c.get('ambiguous', 0)} case(s) only some reading of the commits' windows supports, not reported"
            f"{f' ({examples})' if examples else ''}; {c.get('indeterminate_commits', 0)} commit(s) sent and never answered")


def _rebalances(rf, rel) -> str:
    alive = rf.get("revocations_while_alive") or {}
    longest = rf.get("no_owner_longest_ms") or 0
    rows = "".join(f"<tr><td>{r['index']}</td><td>{e(r['generation'])}</td><td>{e(rel(r['start_ms']))}</td>"
                   f"<td class=num>{(r['end_ms'] - r['start_ms']) / 1000:.2f}s</td><td>{e(', '.join(r['members']))}</td></tr>"
                   for r in rf.get("rounds") or [])
    return (f"<h2>Rebalances</h2><p>{len(rf.get('rounds') or [])} rebalance(s); partitions without an owner for "
            f"{(rf.get('no_owner_total_ms') or 0) / 1000:.1f}s in total (longest window {longest / 1000:.1f}s); "
            f"{alive.get('partitions_revoked', 0)} partition revocation(s) suffered by members that stayed in the group; "
            f"{fmt_int(rf.get('consumed_outside_ownership'))} record(s) consumed outside an ownership.</p>"
            "<table id=rebalances><thead><tr><th>#</th><th>generation</th><th>start</th><th>duration</th><th>members</th></tr></thead><tbody>"
            + rows + "</tbody></table>")


def _partitions(s) -> str:
    rows = "".join(f"<tr><td>{e(p['topic'])}:{p['partition']}</td><td class=num>{fmt_int(p['produced'])}</td>"
                   f"<td class=num>{fmt_int(p['consumed_rows'])}</td><td class=num>{fmt_int(p['consumed_distinct'])}</td>"
                   f"<td class=num>{fmt_int(p['extra'])}</td><td class=num>{fmt_int(p['lost'])}</td><td class=num>{fmt_int(p.get('unseen'))}</td>"
                   f"<td class=num>{fmt_int(p['unacked'])}</td></tr>"
                   for p in s["partitions"])
    return ("<h2>Partitions</h2><table id=partitions><thead><tr><th>partition</th><th>acked</th><th>consumed rows</th>"
            "<th>distinct consumed</th><th>extra deliveries</th><th>lost</th><th>unseen</th><th>consumed, not acked ok</th></tr></thead><tbody>"
            + rows + "</tbody></table>")
