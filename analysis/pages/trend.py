"""`kafka-chaos trend RUNS...`: one HTML page of each series' verdict, re-deliveries, losses and time to stable
across nightly runs, so that a regression shows as a break in a line, and `trend.json` beside it.

RUNS are run directories, or folders holding them (a night's output, or a folder of nights): every
`report/summary.json` under them is read; the figures are those of `compare`.

A series is what was run: the scenario's source (run.json's `source`: its file, or the pytest test that built it;
the scenario's name for runs recorded before it), the client, its version, the group protocol, the assignor, the
membership and a short hash of every other setting of scenario.yaml (the suffixes that make a run's topic and group
names unique left out). A matrix cell or a zoo release is a series of its own.

A night is the folder directly under a given folder of nights (nightly/20261125-0217/), else the given folder
itself. A point outside the min-max of its series' last 10 earlier nights (with at least 3 of them) is an outlier:
marked on the page and listed in trend.json (`outliers`: those of the newest night, for the job summary; `marked`:
every one on the page). Each night's zoo.json adds the bug zoo's table: per bug and release the runs with the
bug's signature, night by night, a night the bug moved (the nightly's gate) marked and named (`zoo_moved`).
"""
from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from analysis.pages.compare import FIGURE_CHECK, read_json, read_scenario, read_summary, row_for
from analysis.errors import InputError

SERIES = (("duplicate_extra_deliveries", "re-deliveries"), ("lost_records", "lost records"),
          ("max_time_to_stable_s", "time to stable, s"))
VERDICT_COLOR = {True: "#59a14f", False: "#e15759", None: "#9e9e9e"}
WINDOW_NIGHTS, MIN_NIGHTS = 10, 3
# the settings a series names in its key; the rest of scenario.yaml goes into its hash
GROUP_KEYS = ("client", "version", "protocol", "assignor", "remote_assignor", "static_membership")
NOT_HASHED = ("name", "description", "zoo")   # the zoo block holds the bug's recorded rate: not what was run
UNIQUE_SUFFIX = re.compile(r"-([0-9a-f]{6})$")  # harness.scenario.unique_names: `-<6 hex>` after every name


@dataclass
class Series:
    key: str
    identity: dict
    rows: list[dict] = field(default_factory=list)


def collect(paths) -> dict[str, Series]:
    """series key -> its runs' figures, oldest first (each row with its `night`)."""
    found: dict[str, Series] = {}
    for path in paths:
        path = Path(path).resolve()
        if not path.exists():
            raise InputError(f"{path}: does not exist")
        for summary_path in _summaries(path):
            run_dir = summary_path.parents[1]
            summary = read_summary(summary_path)
            scenario = read_scenario(run_dir)
            identity = series_identity(run_dir, scenario)
            row = row_for(run_dir, summary, scenario)
            row["night"] = _night(path, run_dir)
            row["not_run_figures"] = {key: row["not_run"][FIGURE_CHECK[key]] for key, _ in SERIES
                                      if FIGURE_CHECK.get(key) in row["not_run"]}
            started = (summary.get("time_range_ms") or [None])[0]
            row["started_ms"] = started if started is not None else _mtime_ms(summary_path)
            key = series_key(identity)
            found.setdefault(key, Series(key, identity)).rows.append(row)
    if not found:
        raise InputError(f"no run with a report/summary.json under {', '.join(str(p) for p in paths)}")
    for series in found.values():
        series.rows.sort(key=lambda r: r["started_ms"])
    return dict(sorted(found.items()))


def _summaries(path: Path) -> list[Path]:
    if (path / "report" / "summary.json").exists():
        return [path / "report" / "summary.json"]
    try:
        return sorted(p for p in path.rglob("report/summary.json") if p.parents[1] != path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be listed ({exc.strerror or type(exc).__name__})") from None


def _night(root: Path, run_dir: Path) -> str:
    parts = run_dir.relative_to(root).parts
    return str(root / parts[0]) if len(parts) >= 2 else str(root)


def _mtime_ms(path: Path) -> int:
    try:
        return int(path.stat().st_mtime * 1000)
    except OSError:
        return 0


def series_identity(run_dir: Path, scenario: dict) -> dict:
    """What was run, from run.json's source and the run's scenario.yaml (read_scenario)."""
    where = run_dir / "scenario.yaml"
    group = scenario.get("consumer_group") or {}
    if not isinstance(group, dict):
        raise InputError(f"{where}: field consumer_group: expected a mapping, got {type(group).__name__}")
    members = group.get("members")
    specs = [group] + ([m for m in members if isinstance(m, dict)] if isinstance(members, list) else [])
    settings = {k: _values(where, specs, k) for k in GROUP_KEYS}
    consumer = "consumer" in settings["protocol"]
    return {
        "source": _source(run_dir) or str(scenario.get("name") or run_dir.name),
        "client": settings["client"] or "librdkafka",
        "client_version": settings["version"] or _started_versions(run_dir) or "unpinned",
        "protocol": settings["protocol"] or "classic",
        "assignor": (settings["remote_assignor"] if consumer else settings["assignor"]) or "default",
        "membership": "+".join(sorted({"static" if s.get("static_membership") else "dynamic"
                                       for s in specs if s is group or "static_membership" in s})),
        "settings": _settings_hash(scenario),
    }


def series_key(identity: dict) -> str:
    return " · ".join(str(identity[k]) for k in ("source", "client", "client_version", "protocol", "assignor",
                                                 "membership", "settings"))


def _values(where: Path, specs: list[dict], key: str) -> str:
    """One setting over the group and its member specs: "range", or "range+roundrobin" for a mixed group."""
    values = set()
    for spec in specs:
        value = spec.get(key)
        if isinstance(value, (dict, list)):
            raise InputError(f"{where}: field consumer_group.{key}: expected a single value, got {type(value).__name__}")
        if value is not None and key != "static_membership":
            values.add(str(value))
    return "+".join(sorted(values))


def _source(run_dir: Path) -> str | None:
    path = run_dir / "run.json"
    if not path.exists():
        return None
    source = read_json(path, "run.json").get("source")
    if source is not None and not isinstance(source, str):
        raise InputError(f"{path}: field source: expected a string or null, got {type(source).__name__}")
    return source


def _started_versions(run_dir: Path) -> str:
    """The client versions the members reported (each member's first event is `started`) for an unpinned client."""
    versions = set()
    for path in sorted((run_dir / "events").glob("*.jsonl")) if (run_dir / "events").is_dir() else []:
        try:
            with path.open("rb") as f:
                first = json.loads(f.readline(65_536).decode("utf-8"))
        except (OSError, ValueError):
            continue   # events are the analysis' to judge: a version it cannot read leaves the key "unpinned"
        if isinstance(first, dict) and first.get("kind") == "started" and isinstance(first.get("client_version"), str):
            versions.add(first["client_version"])
    return "+".join(sorted(versions))


def _settings_hash(scenario: dict) -> str:
    rest = {k: v for k, v in scenario.items() if k not in NOT_HASHED}
    group = rest.get("consumer_group")
    suffix = None
    if isinstance(group, dict):
        match = UNIQUE_SUFFIX.search(str(group.get("group_id") or ""))
        suffix = match.group(1) if match else None
        rest["consumer_group"] = {k: v for k, v in group.items() if k not in GROUP_KEYS}
        if isinstance(group.get("members"), list):
            rest["consumer_group"]["members"] = [{k: v for k, v in m.items() if k not in GROUP_KEYS}
                                                 if isinstance(m, dict) else m for m in group["members"]]
    text = json.dumps(_canonical(rest, suffix), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _canonical(value, suffix: str | None):
    """The settings with the run's unique suffix taken off its names (and the pattern's `(…)-suffix` undone), and
    without null settings: a setting added to the scenario model later, unset, does not split a series."""
    if isinstance(value, dict):
        return {k: _canonical(v, suffix) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_canonical(v, suffix) for v in value]
    if suffix is not None and isinstance(value, str) and value.endswith(f"-{suffix}"):
        value = value[:-len(suffix) - 1]
        return value[1:-1] if value.startswith("(") and value.endswith(")") else value
    return value


def outliers(trend: dict[str, Series]) -> list[dict]:
    """Every point outside the min-max of its series' last WINDOW_NIGHTS earlier nights (MIN_NIGHTS of them at least)."""
    found = []
    for series in trend.values():
        nights = list(dict.fromkeys(r["night"] for r in series.rows))
        for i, row in enumerate(series.rows):
            earlier = nights[max(0, nights.index(row["night"]) - WINDOW_NIGHTS):nights.index(row["night"])]
            if len(earlier) < MIN_NIGHTS:
                continue
            for key, title in SERIES:
                history = [r[key] for r in series.rows if r["night"] in earlier and r.get(key) is not None]
                value = row.get(key)
                if value is None or not history or min(history) <= value <= max(history):
                    continue
                found.append({"series": series.key, "run": row["run"], "run_dir": row["run_dir"], "night": row["night"],
                              "figure": key, "value": value, "min": min(history), "max": max(history),
                              "nights": len(earlier), "text": f"{series.key}: {title} {value:g} outside "
                              f"{min(history):g}–{max(history):g} of the last {len(earlier)} nights ({row['run']})"})
    return found


def zoo_nights(paths) -> list[dict]:
    """Each night's bug-zoo table (a zoo.json in the night's folder), oldest first: per bug and release the runs
    with the bug's signature, and the reasons the nightly gate turned red for it that night."""
    found = []
    for path in paths:
        path = Path(path).resolve()
        tables = [path / "zoo.json"] if (path / "zoo.json").is_file() else sorted(path.glob("*/zoo.json"))
        for table in tables:
            data = read_json(table, "zoo.json")
            bugs = data.get("bugs")
            if not isinstance(bugs, list):
                raise InputError(f"{table}: field bugs: expected a list")
            for bug in bugs:
                if not isinstance(bug, dict):
                    raise InputError(f"{table}: field bugs: expected objects")
                releases = [bug[side] for side in ("affected", "fixed") if isinstance(bug.get(side), dict)]
                found += [{"night": str(table.parent), "bug": str(bug.get("bug")), "side": r.get("side"),
                           "version": r.get("version"), "shown": r.get("shown"), "started": r.get("started"),
                           "status": bug.get("status"), "gate": [str(g) for g in bug.get("gate") or []]}
                          for r in releases]
    return sorted(found, key=lambda z: z["night"])


def _zoo_section(zoo: list[dict]) -> str:
    if not zoo:
        return ""
    nights = list(dict.fromkeys(z["night"] for z in zoo))
    rows = {}
    for z in zoo:
        rows.setdefault((z["bug"], z["side"], z["version"]), {})[z["night"]] = z
    body = ""
    for (bug, side, version), cells in rows.items():
        tds = ""
        for night in nights:
            z = cells.get(night)
            if z is None:
                tds += "<td></td>"
                continue
            moved = " moved" if z["gate"] else ""
            tds += (f"<td class='zoo-cell{moved}' title='{html.escape('; '.join(z['gate']) or 'as recorded')}'>"
                    f"{z['shown']} of {z['started']}{' ✗' if moved else ''}</td>")
        body += f"<tr data-bug='{html.escape(bug)}'><th>{html.escape(bug)}</th><th>{html.escape(str(version))} ({side})</th>{tds}</tr>"
    newest = [g for z in zoo if z["night"] == nights[-1] for g in z["gate"]]
    listed = "".join(f"<li>{html.escape(g)}</li>" for g in dict.fromkeys(newest))
    head = "".join(f"<th>{html.escape(Path(n).name)}</th>" for n in nights)
    return ("<section id=zoo><h2>Bug zoo: runs with each bug's signature, per night</h2><p>A cell marked ✗ is a "
            "night the bug moved (the nightly turned red for it; hover for why).</p>"
            f"<table><tr><th>bug</th><th>release</th>{head}</tr>{body}</table>"
            + (f"<ul class='outliers zoo-moved'>{listed}</ul>" if listed else "") + "</section>")


def render(trend: dict[str, Series], marked: list[dict], zoo: list[dict] = ()) -> str:
    by_run = {}
    for o in marked:
        by_run.setdefault((o["series"], o["run_dir"]), set()).add(o["figure"])
    sections = "".join(_section(s, by_run, [o for o in marked if o["series"] == s.key]) for s in trend.values())
    runs = sum(len(s.rows) for s in trend.values())
    return ("<!doctype html><meta charset=utf-8><title>kafka-chaos trend</title><style>"
            "body{font:14px system-ui,sans-serif;margin:24px;color:#222}h2{margin-top:28px;font-size:16px}"
            "svg{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin-right:8px}"
            "svg text{font:11px system-ui,sans-serif;fill:#333}table{border-collapse:collapse;margin:8px 0}"
            "td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}.outliers{color:#b00}"
            ".zoo-cell.moved{background:#fde0e0;color:#b00;font-weight:600}</style>"
            f"<h1>kafka-chaos trend</h1><p>{len(trend)} series, {runs} run(s), {len(marked)} outlier(s). A series is "
            "what was run: source, client, version, protocol, assignor, membership and a hash of the other settings. "
            "Each point is one run, oldest left; its colour is the run's verdict (green valid, red invalid, grey "
            f"undecided). A ringed point lies outside the min–max of its series' last {WINDOW_NIGHTS} earlier nights; "
            "“n/r”: the check behind the figure did not run (could not verify).</p>"
            f"{_zoo_section(list(zoo))}<div id=trend>{sections}</div>")


def _section(series: Series, by_run: dict, marked: list[dict]) -> str:
    rows = series.rows
    verdicts = "".join(f"<td class='verdict {_word(r['valid'])}' style='background:{_color(r['valid'])}' "
                       f"title='{html.escape(r['run'])}'>{_word(r['valid'])}</td>" for r in rows)
    charts = "".join(_chart(series, key, title, by_run) for key, title in SERIES)
    listed = "".join(f"<li>{html.escape(o['text'])}</li>" for o in marked)
    who = " · ".join(f"{k.replace('_', ' ')} {html.escape(str(v))}" for k, v in series.identity.items())
    return (f"<section class=series data-series='{html.escape(series.key)}' "
            f"data-source='{html.escape(str(series.identity['source']))}'><h2>{html.escape(series.key)}</h2>"
            f"<p class=identity>{who}</p><table><tr><th>verdict</th>{verdicts}</tr></table>{charts}"
            + (f"<ul class=outliers>{listed}</ul>" if listed else "") + "</section>")


def _chart(series: Series, key: str, title: str, by_run: dict, width: int = 300, height: int = 110) -> str:
    rows = series.rows
    left, top, inner_w, inner_h = 40, 18, width - 50, height - 36
    values = [r.get(key) for r in rows]
    top_value = max([v for v in values if v is not None] + [1])
    x = lambda i: left + (inner_w * i / max(1, len(rows) - 1) if len(rows) > 1 else inner_w / 2)  # noqa: E731
    y = lambda v: top + inner_h - inner_h * v / top_value  # noqa: E731
    points = [(x(i), y(v)) for i, v in enumerate(values) if v is not None]
    line = f"<polyline class=trend-line fill=none stroke='#4e79a7' stroke-width=1.5 points='{' '.join(f'{a:.1f},{b:.1f}' for a, b in points)}'/>"
    dots = ""
    for i, (r, v) in enumerate(zip(rows, values)):
        if v is None and key in (r.get("not_run_figures") or ()):
            dots += (f"<text class=not-run x={x(i) - 6:.1f} y={top + inner_h - 3}><title>{html.escape(r['run'])}: not run "
                     f"({html.escape(r['not_run_figures'][key])})</title>n/r</text>")
        elif v is not None:
            outlier = key in by_run.get((series.key, r["run_dir"]), ())
            ring = " stroke='#b00' stroke-width=2.5" if outlier else ""
            dots += (f"<circle class='point{' outlier' if outlier else ''}' cx={x(i):.1f} cy={y(v):.1f} r="
                     f"{5 if outlier else 3.5} fill='{_color(r['valid'])}'{ring}><title>{html.escape(r['run'])}: {v}"
                     f"{' (outlier)' if outlier else ''}</title></circle>")
    return (f"<svg class='chart {key}' width={width} height={height} role=img aria-label='{html.escape(title)}'>"
            f"<text x={left} y=12>{html.escape(title)}</text><text x=4 y={top + 8}>{top_value:g}</text>"
            f"<text x=4 y={top + inner_h}>0</text><line x1={left} y1={top + inner_h} x2={left + inner_w} y2={top + inner_h} "
            f"stroke='#bbb'/>{line}{dots}</svg>")


def _color(valid) -> str:
    return VERDICT_COLOR.get(valid if isinstance(valid, bool) else None)


def _word(valid) -> str:
    return {True: "valid", False: "invalid"}.get(valid, "undecided") if isinstance(valid, bool) else "undecided"


def write(paths, out: Path) -> Path:
    """The page at `out` and trend.json beside it (the same name, .json)."""
    out = Path(out)
    data = out.with_suffix(".json")
    if out.is_dir():
        raise InputError(f"--out {out}: is a directory; --out names the page to write (e.g. {out / 'trend.html'})")
    if data == out:
        raise InputError(f"--out {out}: name an .html page; its trend.json is written beside it")
    trend = collect(paths)
    marked = outliers(trend)
    zoo = zoo_nights(paths)
    newest = max((r["started_ms"], r["night"]) for s in trend.values() for r in s.rows)[1]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(trend, marked, zoo))
        data.write_text(json.dumps({"page": str(out), "newest_night": newest,
                                    "outliers": [o for o in marked if o["night"] == newest], "marked": marked,
                                    "zoo_moved": list(dict.fromkeys(g for z in zoo if z["night"] == zoo[-1]["night"]
                                                                    for g in z["gate"])),
                                    "series": {k: {**s.identity, "runs": len(s.rows)} for k, s in trend.items()}},
                                   indent=2) + "\n")
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__})") from None
    return out
