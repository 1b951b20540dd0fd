"""Issue 56, KAFKA-16352: a transaction its coordinator left prepared with every marker written
(analysis/checks/stuck_prepare.py), read from a planted transaction-states.jsonl, times by hand.

Member a's transactional id g-a: Ongoing at 1000 on broker address b1; PrepareCommit at 2000 with two partitions'
markers to write (b1); the coordinator moves to b3 at 3000 (a sample at 2500 it did not answer: `unknown`, which ends
nothing) and back to b1 at 4000, one partition left; every marker written at 5000; the sampler ends at 20000."""
import json

from analysis.checks.stuck_prepare import prepared_transactions
from analysis.rundir import transactions as txns
from tests.analysis.test_eos_reads import facts, transaction_rows


def state(ts, state_name, coordinator, partitions=(), pid=7, epoch=0, tid="g-a"):
    return {"ts_ms": ts, "kind": "transaction", "transactional_id": tid, "state": state_name, "producer_id": pid,
            "producer_epoch": epoch, "timeout_ms": 60000, "partitions": list(partitions), "coordinator": coordinator}


STUCK = [{"ts_ms": 100, "kind": "sampler", "interval_ms": 500},
         state(1000, "Ongoing", "b1", ["o:0", "o:1"]),
         state(2000, "PrepareCommit", "b1", ["o:0", "o:1"]),
         {"ts_ms": 2500, "kind": "transaction", "transactional_id": "g-a", "state": "unknown", "error": "not_coordinator"},
         state(3000, "PrepareCommit", "b3", ["o:0", "o:1"]),
         state(4000, "PrepareCommit", "b1", ["o:1"]),
         state(5000, "PrepareCommit", "b1"),
         {"ts_ms": 20000, "kind": "sampler_end", "samples": 40}]


def plant(run_dir, rows):
    (run_dir / "transactions").mkdir(parents=True, exist_ok=True)
    (run_dir / "transactions" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in transaction_rows()))
    (run_dir / "transaction-states.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return facts(run_dir)


def test_a_prepared_transaction_with_every_marker_written_and_never_completed_is_a_stall(tmp_path):
    [stall] = prepared_transactions(plant(tmp_path, STUCK)).stalls
    assert (stall["waiting_for"], stall["cause"], stall["members"], stall["transactional_id"]) == (
        "transaction_completion", "stuck_in_prepare", ["a"], "g-a")
    assert (stall["time_ms"], stall["markers_written_ms"], stall["stalled_ms"], stall["open"]) == (
        [2000, 20000], 5000, 15000, True)
    assert (stall["coordinators"], stall["coordinator_moved"], stall["producer_id"], stall["state"]) == (
        ["b1", "b3", "b1"], True, 7, "PrepareCommit")
    assert prepared_transactions(plant(tmp_path, STUCK)).across_a_move == 1


def test_a_transaction_completed_after_its_markers_or_prepared_with_markers_left_is_none(tmp_path):
    """Completed 2 s after its last marker (below the 10 s grace); and one prepared to the end with a marker still to
    write (markers slow, not lost: not this stall)."""
    completed = STUCK[:-1] + [state(7000, "CompleteCommit", "b1"), STUCK[-1]]
    assert prepared_transactions(plant(tmp_path, completed)).stalls == []
    markers_left = STUCK[:5] + [STUCK[-1]]
    assert prepared_transactions(plant(tmp_path, markers_left)).stalls == []


def test_a_stuck_transaction_that_never_moved_says_so_and_a_new_epoch_is_another_transaction(tmp_path):
    """Prepared on b1 alone, every marker written at 2500, completed by a later sample of another producer epoch at
    16000 (the next transaction after a fencing): stuck 13.5 s, coordinator_moved false."""
    rows = [state(1000, "PrepareAbort", "b1", ["o:0"]), state(2500, "PrepareAbort", "b1"),
            state(16000, "PrepareAbort", "b1", ["o:0"], epoch=1), {"ts_ms": 17000, "kind": "sampler_end", "samples": 30}]
    [stall] = prepared_transactions(plant(tmp_path, rows)).stalls
    assert (stall["stalled_ms"], stall["coordinator_moved"], stall["open"], stall["state"]) == (13500, False, False,
                                                                                                 "PrepareAbort")
    assert prepared_transactions(plant(tmp_path, rows)).across_a_move == 0
    assert txns.coordinator_states(rows)["g-a"][-1].until_ms == 17000
