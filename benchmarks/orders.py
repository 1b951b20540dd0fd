"""Analysis cost over row orders and file layouts at a fixed record count (issue 23, item 1).

The same seeded synthetic run (benchmarks/synth.py) written in several layouts: consumption order (one file a
member), ``interleaved`` (each member's partitions interleaved at random in its file: threads writing to one log),
``shuffled`` (every row of 2 files anywhere), ``many files`` (every member's rows merged by time and cut into 400
files) and ``mixed`` (8 files, alternately Parquet and JSONL, interleaved). Every consumed row carries ``n``, its
member's consumption sequence, and ``backwards`` is judged by it; the layouts ``... without n`` leave the column out
(``backwards`` by log order, as for a run written before it: shuffled, about one step back every second row, each
one an anomaly row). Each layout analysed in one warm Spark session REPEAT times, alternately, so that the figures
of one invocation share the machine's load (printed).

    .venv/bin/python -m benchmarks.orders --records 2000000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
from dataclasses import replace
from pathlib import Path

from benchmarks.partitions import measure
from benchmarks.synth import Plan, generate

LAYOUTS = {"ordered": {}, "interleaved": {"order": "interleaved"}, "shuffled": {"order": "shuffled", "files": 2},
           "many files": {"files": 400}, "mixed": {"files": 8, "fmt": "mixed", "order": "interleaved"},
           "ordered without n": {"sequence": False}, "shuffled without n": {"order": "shuffled", "files": 2, "sequence": False}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--layouts", default="ordered,interleaved,shuffled", help=f"comma-separated: {', '.join(LAYOUTS)}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kafka-chaos-bench")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)
    from analysis.api import get_session
    spark = get_session()
    base = Plan(records=a.records, partitions=a.partitions)
    runs = {}
    for name in a.layouts.split(","):
        rd = a.data / f"layout-{a.records}-p{a.partitions}-{name.replace(' ', '-')}"
        if not (rd / "truth.json").is_file():
            generate(rd, replace(base, **LAYOUTS[name]))
        runs[name] = rd
    cells = {name: [] for name in runs}
    for _ in range(a.repeat):  # alternately: each round sees the same load
        for name, rd in runs.items():
            cells[name].append(measure(rd, spark, 1))
    print(f"records {a.records:,}, {a.partitions} partitions; median (min-max) of {a.repeat}, load {os.getloadavg()[0]:.1f}")
    results, ref = [], None
    for name, ms in cells.items():
        walls = [m["wall_s"]["median"] for m in ms]
        phase = lambda p: statistics.median(m["phases_s"].get(p, {"median": 0})["median"] for m in ms)  # noqa: E731
        wall = statistics.median(walls)
        ref = ref or wall
        truth = json.loads((runs[name] / "truth.json").read_text())
        exact = all(m["counts"].get("backwards") == truth["backwards"] for m in ms)
        print(f"  {name:<12} {wall:7.2f} s ({min(walls):.2f}-{max(walls):.2f})  x{wall / ref:.2f}  scanning "
              f"{phase('scanning'):.2f}  checks {phase('checks'):.2f}  backwards {ms[0]['counts'].get('backwards')}"
              f"{'' if exact else ' (truth ' + str(truth['backwards']) + ')'}")
        results.append({"layout": name, "walls_s": walls, "ratio": round(wall / ref, 2), "loads": [m["load_average"] for m in ms],
                        "counts": ms[0]["counts"], "backwards_exact": exact})
    if a.out:
        a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
