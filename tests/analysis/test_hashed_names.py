"""Issue 8 follow-up: the pass groups topics and members by Spark's xxhash64; the names come back exactly."""
from analysis import analyze
from analysis.engine.spark_plan import name_hash
from analysis_runs import Run, known_run

NAMES = ["member-1", "chaos", "", "a", "ü-unicode-é", "x" * 33, "topic." * 40]


def test_name_hash_is_sparks_xxhash64(spark):
    rows = spark.createDataFrame([(n,) for n in NAMES], "name string").selectExpr("name", "xxhash64(name) AS h").collect()
    assert {r["name"]: r["h"] for r in rows} == {n: name_hash(n) for n in NAMES}


def test_names_the_history_does_not_know_are_named_by_the_inputs(tmp_path, spark, fmt):
    """No events: no member and no topic is known before the pass, yet every anomaly and partition names them."""
    s = analyze(known_run(tmp_path / "run", fmt).write(events=False, faults=False), spark=spark)
    assert {(p["topic"], p["partition"]) for p in s["partitions"]} == {("orders", 0), ("orders", 1)}
    triple = next(a for a in s["anomalies"] if a["type"] == "duplicate" and a["offsets"] == [19, 19])
    assert (triple["topic"], triple["members"]) == ("orders", ["m1", "m2"])
    assert s["members"] == ["m1", "m2"]


def test_a_topic_nobody_was_assigned_is_named_in_its_unseen_records(tmp_path, spark):
    """Members with events own t; the producer also wrote to `orphan`, which nobody subscribed to: nothing read
    it, so its records are unseen (issue 37), under the topic's own name."""
    r = Run(tmp_path / "run").produce("t", 0, range(10)).produce("orphan", 0, range(5))
    r.event("a", "started", 0, detail="protocol=classic assignor=range").event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(10), at=100, generation=1).event("a", "stopped", 400)
    s = analyze(r.write(), spark=spark)
    [unseen] = [a for a in s["anomalies"] if a["type"] == "unseen"]
    assert (unseen["topic"], unseen["partition"], unseen["offsets"], unseen["count"]) == ("orphan", 0, [0, 4], 5)
