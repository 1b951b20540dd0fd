"""The report's first screen after the verdict: the group as a whole, readable at 500 members and 5,000 partitions.
The state band (analysis/figures/state_band.py), the partitions without an owner over time, the partitions each member
owned, and the rebalance rounds on one time axis; per-partition detail comes after, folded when there is much."""
from __future__ import annotations

import html
import statistics

from analysis.rundir.history import OPEN

LEFT, WIDTH = 110, 1040
STATE_COLOR = {"Stable": "#59a14f", "PreparingRebalance": "#f28e2b", "CompletingRebalance": "#edc948",
               "Empty": "#bab0ac", "Dead": "#444", "unknown": "#e0e0e0", "Assigning": "#f28e2b",
               "Reconciling": "#edc948", "NotReady": "#bab0ac"}
FOLD_ABOVE = 64  # partitions: more than this and the per-partition views start folded


def esc(x) -> str:
    return html.escape("" if x is None else str(x))


class Axis:
    def __init__(self, t0: int, t1: int) -> None:
        self.t0, self.span = t0, max(1, t1 - t0)

    def x(self, t: int) -> float:
        return LEFT + max(0, min(self.span, t - self.t0)) / self.span * WIDTH

    def ticks(self, top: int, height: int) -> str:
        return time_ticks(self.t0, self.t0 + self.span, LEFT, WIDTH, top, height)


def time_ticks(t0: int, t1: int, left: int, width: int, top: int, height: int) -> str:
    """An SVG time axis over [t0, t1]: a grid line and a label in seconds every 1, 2, 5, ... s, at most about ten."""
    span = max(1, t1 - t0)
    steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400]
    step = next((st for st in steps if span / 1000 / st <= 10), steps[-1]) * 1000
    return "".join(f"<line x1={left + t / span * width:.1f} x2={left + t / span * width:.1f} y1={top} y2={top + height} "
                   f"stroke='#eee'/><text x={left + t / span * width:.1f} y={top + height + 12} text-anchor=middle>"
                   f"{t / 1000:g}s</text>" for t in range(0, span + 1, step))


def group_view(s: dict, x: dict, t0: int) -> str:
    periods = x.get("periods") or []
    t1 = max([s["time_range_ms"][1] or t0] + [p.start for p in periods])
    axis = Axis(t0, t1)
    parts = ["<section id=group><h2>The group</h2>", _summary_line(s, x, periods), state_band(s.get("group_state_band"), x, axis),
             unowned_over_time(x, axis), per_member(periods, x.get("workload_stop_ms"), t1),
             coordinator_rounds(s.get("coordinator_rounds"), t0, len(s["members"])), "</section>"]
    return "".join(parts)


def _summary_line(s, x, periods) -> str:
    rounds = x.get("rounds") or []
    partitions = len({(p.topic, p.partition) for p in periods} | {(r["topic"], r["partition"]) for r in s["partitions"]})
    rf = s.get("rebalance_figures") or {}
    return (f"<p id=group-summary>{len(s['members']):,} members · {partitions:,} partitions · {len(rounds):,} rebalance "
            f"round(s) · {(rf.get('no_owner_total_ms') or 0) / 1000:,.1f} partition-seconds without an owner (longest "
            f"{(rf.get('no_owner_longest_ms') or 0) / 1000:.1f} s)</p>")


def _rounds(x, axis: Axis, top: int, height: int) -> str:
    return "".join(f"<line class=rebalance x1={axis.x(r['start_ms']):.1f} x2={axis.x(r['start_ms']):.1f} y1={top} "
                   f"y2={top + height} stroke='#555' stroke-dasharray='3,2'><title>rebalance {r['index']} (gen "
                   f"{esc(r['generation'])})</title></line>" for r in x.get("rounds") or [])


def _label(segment: dict) -> str:
    if segment.get("group_epoch") is not None:
        return f"e{segment['group_epoch']}/{segment['assignment_epoch']}"
    return "" if segment.get("generation") is None else f"g{segment['generation']}"


def _detail(seg: dict, label: str, axis: Axis) -> str:
    """A segment's tooltip: what it was, and where it comes from (the coordinator's log, or samples)."""
    at = lambda ms: f"{(ms - axis.t0) / 1000:.3f}s"  # noqa: E731
    if seg["source"] == "log":
        return (f"{seg['state']} {label} · from the coordinator's log, {at(seg['from_ms'])}–{at(seg['to_ms'])}"
                + (f" · {seg['members']} members" if seg.get("members") is not None else "")
                + (f" · reason: {seg['reason']}" if seg.get("reason") else ""))
    return (f"{seg['state']} {label} · {seg.get('members')} members, {seg.get('assigned')} partitions assigned"
            + (f", {seg['behind']} members behind the target epoch" if seg.get("behind") else "")
            + f" · sampled, seen {at(seg['from_ms'])}–{at(seg['last_seen_ms'])}")


def state_band(band: dict | None, x, axis: Axis) -> str:
    if not band:
        return "<p id=state-band-none class=muted>The group's state was not sampled in this run (no group-states.jsonl).</p>"
    top, height = 4, 26
    out = [f"<svg id=state-band width={LEFT + WIDTH + 20} height={top + height + 18} role=img aria-label='group state over time'>",
           f"<text x={LEFT - 6} y={top + 17} text-anchor=end>state</text>",
           "<defs><pattern id=hatch width=6 height=6 patternUnits=userSpaceOnUse patternTransform='rotate(45)'>"
           "<rect width=3 height=6 fill='#edc948'/></pattern></defs>"]
    for seg in band["segments"]:
        xa, xb = axis.x(seg["from_ms"]), axis.x(seg["to_ms"])
        label = _label(seg)
        logged = seg["source"] == "log"
        width = max(2 if logged else 1, xb - xa)
        out.append(f"<rect class='state {esc(seg['source'])}' data-state='{esc(seg['state'])}' "
                   f"data-generation='{esc(seg.get('generation'))}' x={xa:.1f} y={top} width={width:.1f} height={height} "
                   f"fill='{STATE_COLOR.get(seg['state'], '#999')}'><title>{esc(_detail(seg, label, axis))}</title></rect>")
        if logged:  # a dark edge under the band: the coordinator logged this change
            out.append(f"<rect class=logged x={xa:.1f} y={top + height - 3} width={width:.1f} height=3 fill='#333'/>")
        if xb - xa > 8 * len(label) + 4:
            out.append(f"<text x={(xa + xb) / 2:.1f} y={top + 17} text-anchor=middle>{esc(label)}</text>")
    for seg in band.get("inferred") or []:
        xa, xb = axis.x(seg["from_ms"]), axis.x(seg["to_ms"])
        out.append(f"<rect class='state inferred' data-state='{esc(seg['state'])}' data-generation='{esc(seg.get('generation'))}' "
                   f"x={xa:.1f} y={top} width={max(2, xb - xa):.1f} height={height} fill='url(#hatch)' stroke='#b8860b'>"
                   f"<title>{esc(seg['state'])} (inferred) g{esc(seg.get('generation'))}: {esc(seg['inferred'])}</title></rect>")
    out.append(_rounds(x, axis, top, height) + "</svg>")
    legend = "".join(f"<span><i style='background:{STATE_COLOR[st]}'></i>{st}</span>" for st in
                     sorted({seg["state"] for seg in band["segments"]} & set(STATE_COLOR)))
    note = (f"sampled every {band['interval_ms']} ms ({esc(band['api'])}); a state shorter than that can go unseen"
            + ("; <i style='background:#333;height:3px'></i>dark edge: from the coordinator's log (coordinator.log), to the "
               "millisecond: each round's PreparingRebalance, CompletingRebalance and the Stable after it"
               if any(seg["source"] == "log" for seg in band["segments"]) else "")
            + ("; <i style='background:repeating-linear-gradient(45deg,#edc948 0 3px,#fff 3px 6px);border:1px solid "
               "#b8860b'></i>hatched: CompletingRebalance inferred from "
               "the members' assignments" if band.get("inferred") else "")
            + ("; labels: gN the generation (the log's, else from the members' events)" if band.get("protocol") == "classic" else
               "; labels: eG/A the group epoch and the target assignment epoch"))
    return (f"<div class=legend>{legend}</div>{''.join(out)}<p class='muted small'>{note}</p>"
            + member_epoch_strip(band.get("member_epochs"), axis))


OPEN_STRIP_UP_TO = 32  # members: more than this and each member's epoch strip starts folded


def member_epoch_strip(members: list[dict] | None, axis: Axis) -> str:
    """KIP-848: a row a member, grey while the coordinator listed it, orange where its epoch was behind the target
    assignment's (state_band.member_epochs)."""
    if not members:
        return ""
    row = 6 if len(members) <= OPEN_STRIP_UP_TO else 2
    height = row * len(members)
    out = [f"<svg id=member-epochs width={LEFT + WIDTH + 20} height={height + 18} role=img "
           f"aria-label='each member epoch against the target'>", axis.ticks(0, height)]
    for i, m in enumerate(members):
        y = i * row
        xa, xb = axis.x(m["first_ms"]), axis.x(m["last_ms"])
        out.append(f"<rect class=member-epoch x={xa:.1f} y={y} width={max(1, xb - xa):.1f} height={max(1, row - 1)} "
                   f"fill='#ddd'><title>{esc(m['member'])}</title></rect>")
        for a, b, epoch, target in m["behind"]:
            xa, xb = axis.x(a), axis.x(b)
            out.append(f"<rect class=behind x={xa:.1f} y={y} width={max(1, xb - xa):.1f} height={max(1, row - 1)} "
                       f"fill='#f28e2b'><title>{esc(m['member'])}: epoch {epoch}, target {target}, "
                       f"{(a - axis.t0) / 1000:.2f}s–{(b - axis.t0) / 1000:.2f}s</title></rect>")
    if len(members) <= OPEN_STRIP_UP_TO:
        out.insert(1, "".join(f"<text x={LEFT - 6} y={i * row + row} text-anchor=end font-size=6>{esc(m['member'])}</text>"
                              for i, m in enumerate(members)))
    behind = sum(1 for m in members if m["behind"])
    caption = (f"each member's epoch: {len(members):,} members, {behind:,} of them behind the target assignment at "
               "some time (orange)")
    svg = "".join(out) + "</svg>"
    if len(members) <= OPEN_STRIP_UP_TO:
        return f"{svg}<p class='muted small'>{caption}</p>"
    return f"<details id=member-epochs-folded><summary>{caption}</summary>{svg}</details>"


def unowned_over_time(x, axis: Axis) -> str:
    windows = [(a, b) for w in (x.get("no_owner") or {}).get("partitions", []) for a, b in w.get("windows", [])]
    top, height = 6, 60
    deltas: dict[int, int] = {}
    for a, b in windows:
        deltas[a] = deltas.get(a, 0) + 1
        deltas[b] = deltas.get(b, 0) - 1
    level, points, peak = 0, [(axis.t0, 0)], 1
    for t in sorted(deltas):
        points.append((t, level))
        level += deltas[t]
        points.append((t, level))
        peak = max(peak, level)
    points.append((axis.t0 + axis.span, level))
    line = " ".join(f"{axis.x(t):.1f},{top + height - n / peak * height:.1f}" for t, n in points)
    return (f"<svg id=unowned width={LEFT + WIDTH + 20} height={top + height + 18} role=img aria-label='partitions without an owner'>"
            + axis.ticks(top, height) + _rounds(x, axis, top, height)
            + f"<text x={LEFT - 6} y={top + 10} text-anchor=end>{peak:,}</text><text x={LEFT - 6} y={top + height} text-anchor=end>0</text>"
            + f"<polyline fill=none stroke='#c62828' stroke-width=1.5 points='{line}'/></svg>"
            + "<p class='muted small'>partitions without an owner over time; dashed: rebalance rounds</p>")


def per_member(periods, stop_ms, t1: int) -> str:
    """How many partitions each member owned just before the workload stopped (its last assignment)."""
    at = (stop_ms if stop_ms and stop_ms < OPEN else t1) - 1
    owned: dict[str, int] = {}
    for p in periods:
        if p.start <= at < p.end:
            owned[p.member] = owned.get(p.member, 0) + 1
    if not owned:
        return "<p id=per-member class=muted>No member owned a partition before the workload stopped.</p>"
    counts = sorted(owned.values())
    histogram: dict[int, int] = {}
    for n in counts:
        histogram[n] = histogram.get(n, 0) + 1
    bars = "".join(f"<span class=bar title='{m} member(s) owned {n} partition(s)'><b style='height:{max(2, 40 * m // max(histogram.values()))}px'>"
                   f"</b>{n}</span>" for n, m in sorted(histogram.items()))
    return (f"<div id=per-member><p>Partitions per member before the workload stopped: {len(counts):,} members, min "
            f"{counts[0]}, median {statistics.median(counts):g}, max {counts[-1]}.</p><div class=bars>{bars}</div></div>")


OPEN_ROUNDS_UP_TO = 5  # rounds or epochs (of a group of at most OPEN_STRIP_UP_TO members) shown unfolded


def _ms(v) -> str:
    return "–" if v is None else f"{v:,}"


def _names(names: list[str], most: int = 3) -> str:
    if not names:
        return ""
    more = f" and {len(names) - most:,} more" if len(names) > most else ""
    return esc(", ".join(names[:most]) + more)


def _folded(summary: str, head: str, rows: list[str], fold_id: str, members: int) -> str:
    """A summary line over the table, which starts folded unless it is short and the group small (a large group's
    first screen is its figures)."""
    opened = " open" if len(rows) <= OPEN_ROUNDS_UP_TO and members <= OPEN_STRIP_UP_TO else ""
    return (f"<details id={fold_id}{opened}><summary>{summary}</summary><table class=rounds>{head}{''.join(rows)}"
            "</table></details>")


def _total(values: list) -> str:
    values = [v for v in values if v is not None]
    return f"{sum(values):,} ms in all (longest {max(values, default=0):,} ms)"


def coordinator_rounds(found: dict | None, t0: int, members: int) -> str:
    """Each round (classic) or epoch (KIP-848) as the group's coordinator logged it (analysis/rundir/coordinator_log.py)."""
    if found is None:
        return "<p id=coordinator-rounds-none class=muted>No coordinator.log in this run (the brokers' logs were not saved).</p>"
    at = lambda ms: f"{(ms - t0) / 1000:.2f}s"  # noqa: E731
    parts = ["<div id=coordinator-rounds>"]
    rounds = found["rounds"]
    if rounds:
        late = sum(len(r["late"]) + len(r["not_rejoined"]) for r in rounds)
        summary = (f"{len(rounds):,} rounds, as the coordinator logged them: JoinGroup phases "
                   f"{_total([r['join_ms'] for r in rounds])}, the leader's assignment {_total([r['sync_ms'] for r in rounds])}; "
                   f"{late:,} members late or not rejoined")
        head = ("<tr><th>began</th><th>reason</th><th>generation</th><th>members</th><th>JoinGroup phase ms</th>"
                "<th>leader's assignment ms</th><th>leader</th><th>admitted</th><th>late</th><th>not rejoined</th></tr>")
        rows = [f"<tr class=round><td>{at(r['began_ms'])}</td><td>{esc(r['reason'])}</td><td>{esc(r['generation'])}</td>"
                f"<td>{_ms(r['members'])}</td><td>{_ms(r['join_ms'])}</td>"
                f"<td>{_ms(r['sync_ms']) if r['sync_ms'] is not None or r['generation'] is None else 'superseded'}</td>"
                f"<td>{esc(r['leader'] or '')}</td><td>{_names(r['joined'])}</td><td>{_names(r['late'])}</td>"
                f"<td>{_names(r['not_rejoined'])}</td></tr>" for r in rounds]
        parts.append(_folded(summary, head, rows, "coordinator-round-table", members))
    epochs = found["epochs"]
    if epochs:
        computed = [e["assign_ms"] for e in epochs if e["assign_ms"] is not None]
        summary = (f"{len(epochs):,} group epochs, as the coordinator logged them; {len(computed):,} target "
                   f"assignments computed, {_total(computed)}")
        head = "<tr><th>at</th><th>epoch</th><th>cause</th><th>target assignment ms</th><th>assignor</th></tr>"
        rows = [f"<tr class=epoch><td>{at(e['at_ms'])}</td><td>{e['epoch']}</td><td>{esc(e['cause'])}</td>"
                f"<td>{_ms(e['assign_ms'])}</td><td>{esc(e['assignor'] or '')}</td></tr>" for e in epochs]
        parts.append(_folded(summary, head, rows, "coordinator-epoch-table", members))
    if not rounds and not epochs:
        parts.append("<p class=muted>The coordinator logged no round or epoch of this group.</p>")
    return "".join(parts) + "</div>"
