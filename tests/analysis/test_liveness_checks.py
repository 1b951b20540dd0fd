"""Issue 12: the `stall` and `split_ownership` checks, each on tiny hand-made histories with the exact anomaly."""
import numpy as np

from analysis import analyze
from analysis.engine.kernels import first_ack
from analysis_runs import T0, Run

EAGER = "protocol=classic assignor=range"


def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def owned_by_a(root, fmt="jsonl") -> Run:
    """a owns t:0 from 10 ms to the end; the producer acks one record every 100 ms."""
    r = Run(root, fmt)
    r.event("a", "started", 0, detail=EAGER).event("a", "assigned", 10, ["t:0"], generation=1)
    return r


def test_a_stall_inside_one_block_is_found_exactly(tmp_path, spark, fmt):
    """a delivers 0-29 as they come, then nothing for 12 s while 30-99 wait, then the rest: one stall from the
    last delivery (30 was already acked) to the next, although every delivery is in one 64-offset block."""
    r = owned_by_a(tmp_path / "run", fmt).produce("t", 0, range(100), step=100)
    r.consume("a", "t", 0, range(30), at=100, step=100).consume("a", "t", 0, range(30, 100), at=15_000, step=10)
    r.event("a", "stopped", 20_000)
    s = analyze(r.write(), spark=spark, stall_ms=5_000)
    assert [(a["partition"], a["offsets"], a["members"], a["time_ms"], a["stalled_ms"], a["open"]) for a in of(s, "stall")] == \
        [(0, [30, 30], ["a"], [T0 + 3_000, T0 + 15_000], 12_000, False)]
    assert s["anomaly_counts"]["stall"] == 1 and s["checks"]["stall"]["stall_ms"] == 5_000
    assert s["valid"] is True  # a stall is reported, it does not make a run invalid
    assert s["checks"]["stall"]["first_ack_queries"] == 1  # the gap's top (29) splits a block: its rows were read


def test_a_stall_after_a_whole_block_is_settled_by_the_blocks(tmp_path, spark):
    """a delivers 0-63 by 0.73 s and nothing until 15 s while 64-199 wait (acked from 0.64 s): the stall starts at
    the last delivery, and the produced blocks say so without reading a record back."""
    r = owned_by_a(tmp_path / "run").produce("t", 0, range(200), step=10)
    r.consume("a", "t", 0, range(64), at=100, step=10).consume("a", "t", 0, range(64, 200), at=15_000, step=10)
    s = analyze(r.write(), spark=spark, stall_ms=5_000)
    assert [(a["offsets"], a["time_ms"]) for a in of(s, "stall")] == [([64, 64], [T0 + 730, T0 + 15_000])]
    assert s["checks"]["stall"]["first_ack_queries"] == 0


def blocks(*rows):
    """Produced blocks as kernels.check_groups folds them: (b, mask, (min ts, its lowest offset),
    (max ts, its highest offset))."""
    b, mask, kmin, kmax = zip(*rows)
    out = {"b": np.array(b), "mask": np.array(mask, dtype=np.uint64).view(np.int64),
           "kmin": np.array([t << 6 | o for t, o in kmin]), "kmax": np.array([t << 6 | o for t, o in kmax])}
    out["tmin"], out["tmax"] = out["kmin"] >> 6, out["kmax"] >> 6
    return out


def test_first_ack_is_exact_where_the_blocks_can_say_and_bounded_elsewhere():
    full = (1 << 64) - 1
    pb = blocks((0, full, (100, 0), (900, 63)), (1, full, (1_000, 0), (1_500, 63)), (3, 0b1, (50, 0), (50, 0)))
    assert first_ack(pb, -1) == {"lo": 50, "hi": 50}          # before anything: the earliest ack of all
    assert first_ack(pb, 63) == {"lo": 50, "hi": 50}          # a block's end: the blocks above it
    assert first_ack(pb, 200) == {"lo": None, "hi": None}     # nothing acked above
    late = blocks((0, full, (100, 0), (900, 63)), (1, full, (1_000, 0), (1_500, 63)))
    assert first_ack(late, 10) == {"lo": 100, "hi": 900}      # block 0's earliest ack is at 0: between min and max
    first_above = blocks((0, full, (100, 40), (900, 5)), (1, full, (1_000, 0), (1_500, 63)))
    assert first_ack(first_above, 10) == {"lo": 100, "hi": 100}  # its earliest ack is above 10: exact
    unknown = blocks((0, full, (100, 3), (900, 5)))
    assert first_ack(unknown, 10) == {"lo": 100, "hi": None}  # records above 10, but when: only their rows say


def test_an_idle_partition_is_no_stall(tmp_path, spark):
    """The producer pauses for 12 s: nothing waits, so the gap in deliveries is no stall."""
    r = owned_by_a(tmp_path / "run").produce("t", 0, range(30), step=100).produce("t", 0, range(30, 60), at=15_000, step=100)
    r.consume("a", "t", 0, range(30), at=50, step=100).consume("a", "t", 0, range(30, 60), at=15_050, step=100)
    s = analyze(r.write(), spark=spark, stall_ms=5_000)
    assert s["anomaly_counts"]["stall"] == 0


def test_no_owner_and_a_dead_owner_are_not_stalls(tmp_path, spark):
    """t:0 has no owner from 3 s to 14 s (a rebalance pause, shown elsewhere), and t:1's owner b is killed at 3 s
    and started again at 14 s: neither partition stalls by the check's rule."""
    r = Run(tmp_path / "run").produce("t", 0, range(100), step=100).produce("t", 1, range(100), step=100)
    r.event("a", "started", 0, detail=EAGER).event("b", "started", 0, detail=EAGER)
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, ["t:1"], generation=1)
    r.consume("a", "t", 0, range(30), at=100, step=100).consume("b", "t", 1, range(30), at=100, step=100)
    r.event("a", "revoked", 3_000, ["t:0"], generation=1).event("a", "assigned", 14_000, ["t:0"], generation=2)
    r.fault("crash-b", 3_000, 3_100, kind="member_crash", target="b")
    r.event("b", "started", 14_000, detail=EAGER).event("b", "assigned", 14_000, ["t:1"], generation=2)
    r.consume("a", "t", 0, range(30, 100), at=15_000, step=10).consume("b", "t", 1, range(30, 100), at=15_000, step=10)
    s = analyze(r.write(), spark=spark, stall_ms=5_000)
    assert s["anomaly_counts"]["stall"] == 0


def test_a_stall_to_the_end_is_open_and_blamed_on_the_fault_before_it(tmp_path, spark):
    """a stops delivering t:0 at 3 s for good (t:1 goes on to 20 s); a broker fault began at 2.5 s."""
    r = owned_by_a(tmp_path / "run").produce("t", 0, range(100), step=100).produce("t", 1, range(200), step=100)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1)
    r.consume("a", "t", 0, range(30), at=100, step=100).consume("a", "t", 1, range(200), at=100, step=100)
    r.fault("pause-1", 2_500, 4_000)
    s = analyze(r.write(), spark=spark, stall_ms=5_000, grace_ms=1_000)
    [a] = of(s, "stall")
    assert (a["partition"], a["time_ms"], a["open"], a["fault_ids"]) == (0, [T0 + 3_000, T0 + 20_000], True, ["pause-1"])
    assert s["lost_records"] == 0 and s["unseen_records"] == 70  # never read that far: still in Kafka (issue 37)


def test_the_default_threshold_is_five_heartbeats(tmp_path, spark):
    r = Run(tmp_path / "run").produce("t", 0, range(100), step=100)
    r.event("a", "started", 0, detail=EAGER, heartbeat_interval_ms=2_000).event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, range(30), at=100, step=100).consume("a", "t", 0, range(30, 100), at=12_000, step=10)
    s = analyze(r.write(), spark=spark)
    assert s["checks"]["stall"]["stall_ms"] == 10_000 and s["anomaly_counts"]["stall"] == 0  # 9 s < 5 x 2 s


def test_a_member_whose_join_is_not_answered_stalls(tmp_path, spark):
    """a forms the group at 1 s; b starts at 3 s and is assigned at 40 s (KAFKA-14024's stuck join); c starts at
    5 s and is assigned 2 s later; d starts at 10 s and never is. a's own first join (the group forming) is
    not a wait."""
    r = Run(tmp_path / "run").produce("t", 0, range(10))
    for m, at in (("a", 0), ("b", 3_000), ("c", 5_000), ("d", 10_000)):
        r.event(m, "started", at, detail=EAGER)
    r.event("a", "assigned", 1_000, ["t:0"], generation=1).consume("a", "t", 0, range(10), at=1_100)
    r.event("c", "assigned", 7_000, [], generation=2).event("b", "assigned", 40_000, [], generation=3)
    r.consume("a", "t", 0, [9], at=50_000)  # the run is observed to 50 s
    s = analyze(r.write(), spark=spark, stall_ms=5_000)
    assert [(a["members"], a["waiting_for"], a["time_ms"], a["open"], a["topic"]) for a in of(s, "stall")] == \
        [(["b"], "assignment", [T0 + 3_000, T0 + 40_000], False, None),
         (["d"], "assignment", [T0 + 10_000, T0 + 50_000], True, None)]


# ------------------------------------------------------------------------------------------------ split
def one_round_two_owners(root, fmt="jsonl", b_delivers=True) -> Run:
    """Generation 2 gives t:0 to both a and b (KAFKA-7026's eager sticky assignor); both deliver 10-19."""
    r = Run(root, fmt).produce("t", 0, range(20)).produce("t", 1, range(20))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail=EAGER)
    r.event("a", "assigned", 10, ["t:0", "t:1"], generation=1).consume("a", "t", 0, range(10), at=100)
    r.consume("a", "t", 1, range(20), at=100)
    r.event("a", "committed", 200, offsets={"t:0": 10, "t:1": 20}, generation=1)
    r.event("a", "assigned", 1_000, ["t:0"], generation=2).event("b", "assigned", 1_000, ["t:0", "t:1"], generation=2)
    r.consume("a", "t", 0, range(10, 20), at=1_100)
    if b_delivers:
        r.consume("b", "t", 0, range(10, 20), at=1_200)
    r.event("a", "stopped", 3_000).event("b", "stopped", 3_000)
    return r


def test_one_round_giving_a_partition_to_two_members_is_split_ownership(tmp_path, spark, fmt):
    s = analyze(one_round_two_owners(tmp_path / "run", fmt).write(), spark=spark)
    [a] = of(s, "split_ownership")
    assert (a["topic"], a["partition"], a["members"], a["generations"], a["delivered_twice"], a["offsets"]) == \
        ("t", 0, ["a", "b"], [2], 10, [10, 19])
    assert a["delivered"] == {"a": 10, "b": 10} and a["time_ms"][0] == T0 + 1_000
    assert s["valid"] is False


def test_two_owners_of_whom_one_delivers_is_no_split(tmp_path, spark):
    s = analyze(one_round_two_owners(tmp_path / "run", b_delivers=False).write(), spark=spark)
    assert s["anomaly_counts"]["split_ownership"] == 0


def test_a_zombie_is_no_split(tmp_path, spark):
    """a, frozen, still believes it owns t:0 after generation 2 gave it to b, and delivers from its fetched batch:
    over the budget, but no round gave t:0 to two members."""
    r = Run(tmp_path / "run").produce("t", 0, range(40))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail=EAGER)
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, range(10), at=100)
    r.event("b", "assigned", 1_000, ["t:0"], generation=2).consume("b", "t", 0, range(10, 40), at=1_100)
    r.consume("a", "t", 0, range(10, 20), at=1_500).event("a", "revoked", 1_600, ["t:0"], generation=1)
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["split_ownership"] == 0
    assert s["anomaly_counts"]["duplicate_over_budget"] == 10
