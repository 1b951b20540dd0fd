"""Cluster start-up, step by step (issue 13): `python -m benchmarks.cluster_start [--repeat N] [--image IMG ...]`.

Starts the default cluster (3 KRaft brokers, Toxiproxy, every lane) N times, from `KafkaCluster.start()` until a
topic with RF 3 is created, and prints each step's seconds (`cluster.start_s`, what cluster.json records) as the
median with the minimum and maximum beside it. With several `--image`s the images take turns, run by run, so a
busy machine slows each of them alike. Images are cached (built by `make setup`); nothing is pulled.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks import spread
from harness.cluster.kafka import KafkaCluster
from harness.scenario import ClusterSpec

ROOT = Path(__file__).resolve().parents[1]


def one_start(image: str | None, run: int) -> dict[str, float]:
    if image:
        os.environ["KAFKA_CHAOS_KAFKA_IMAGE"] = image
    cluster = KafkaCluster(ClusterSpec(), f"bench-start-{run}-{int(time.time())}",
                           client_lanes=tuple(f"member-{i}" for i in range(1, 6)) + ("producer-1",))
    try:
        cluster.start()
        return dict(cluster.start_s)
    finally:
        cluster.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--image", action="append", help="a Kafka image to start (repeatable: they take turns)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cluster-start.json")
    a = ap.parse_args(argv)
    images = a.image or [None]
    runs: dict[str, list[dict]] = {str(i): [] for i in images}
    for n in range(a.repeat):
        for image in images:
            runs[str(image)].append(one_start(image, n))
            print(f"run {n + 1} {image or 'versions.env image'}: {json.dumps(runs[str(image)][-1])}", flush=True)
    print(f"\n{'step':12}" + "".join(f"{str(i or 'versions.env image'):>32}" for i in images))
    for step in runs[str(images[0])][0]:
        print(f"{step:12}" + "".join(f"{spread([r[step] for r in runs[str(i)]]):>32}" for i in images))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"repeat": a.repeat, "runs": runs}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
