"""Issue 37 on a real cluster: a member frozen or killed with a commit in flight, on either client, gives no false
`commit_ahead` and no loss (the commit is read as an operation with a window, what only one reading supports is
counted as ambiguous); a group that cannot catch up before its drain limit has unseen records, not lost ones."""
import pytest

from benchmarks.commit_windows import in_flight_at
from run_logs import handed_over, rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def with_member_1_on(name: str, client: str) -> dict:
    scenario = catalog(name)
    scenario["consumer_group"]["members"][0]["client"] = client
    return scenario


def read_from_after(run_dir, t: int) -> dict[str, int]:
    """Each partition's lowest offset consumed after ``t``, by any member: where reading went on from."""
    out: dict[str, int] = {}
    for r in rows(run_dir / "consumed"):
        tp = f"{r['topic']}:{r['partition']}"
        if r["consumed_at_ms"] > t and r["offset"] < out.get(tp, r["offset"] + 1):
            out[tp] = r["offset"]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("client", ["java", "librdkafka"])
@pytest.mark.parametrize("fault", ["freeze", "crash"])
def test_a_commit_in_flight_at_a_freeze_or_a_crash_is_no_false_finding(chaos_run, fault, client):
    """The proxy holds member-1's commit across its stop, and the commit lands: the next reads of its partitions
    start at its offsets. A killed member never answers it (an indeterminate commit: counted, and what only the
    reading "it never landed" would report is ambiguous); a frozen one logs its answer after the hand-over (placed
    at the hand-over). Fails if the analysis drops a commit never answered (crash: a false commit_ahead), places a
    late answer at its logging, not the hand-over (freeze: ambiguous; with requested_at_ms ignored too, a false
    commit_ahead), or if the scenario no longer puts a commit in flight that lands."""
    run = chaos_run(with_member_1_on(f"commit-in-flight-{fault}", client))
    assert run.errors == [] and run.drained, run.errors
    s, faults = run.summary, rows(run.run_dir, "faults")
    stopped = next(f for f in faults if f["kind"] in ("member_freeze", "member_crash"))
    held = next(f for f in faults if f["kind"] == "rpc")
    [hit] = held["hits"]
    assert hit["at_ms"] < stopped["injected_at_ms"] < hit["at_ms"] + held["params"]["delay_ms"], (hit, stopped)
    [(sent, answer)] = in_flight_at(run.run_dir, "member-1", stopped["injected_at_ms"])
    read_from = read_from_after(run.run_dir, stopped["injected_at_ms"])
    assert {tp: read_from.get(tp) for tp in sent["offsets"]} == sent["offsets"], ("the commit did not land", sent)
    info = s["checks"]["commit_ahead"]
    assert s["anomaly_counts"]["commit_ahead"] == 0, [a for a in s["anomalies"] if a["type"] == "commit_ahead"]
    assert s["lost_records"] == 0, [a for a in s["anomalies"] if a["type"] == "lost"][:3]
    if fault == "crash":
        assert answer is None, answer
        assert info["indeterminate_commits"] >= len(sent["offsets"]) and info["ambiguous"] >= 1, \
            (info["indeterminate_commits"], info["ambiguous"])
    else:
        handed = handed_over(run.run_dir, "member-1", sent["offsets"], stopped["injected_at_ms"])
        assert handed is not None and answer is not None and answer["ts_ms"] > handed, (handed, answer)
        assert info["ambiguous"] == 0, info["ambiguous_examples"]  # placed at the hand-over: no reading is left open


def test_a_group_that_cannot_catch_up_leaves_unseen_records_not_lost_ones(chaos_run):
    """Each member spends 1 s on every batch of at most 20 records while 6,000 arrive in 3 s, and the drain limit is
    4 s: most records are still in Kafka when the run ends."""
    run = chaos_run({"producer": {"records": 6000, "rate": 2000},
                     "consumer_group": {"members": 2, "batch_size": 20, "processing": {"per_batch_ms": 1000}},
                     "run": {"drain_timeout_s": 4}})
    s = run.summary
    produced = {(r["topic"], r["partition"], r["offset"]) for r in rows(run.run_dir / "produced") if r.get("status", "ok") == "ok"}
    consumed = {(r["topic"], r["partition"], r["offset"]) for r in rows(run.run_dir / "consumed")}
    never = len(produced - consumed)
    assert never > 0 and not run.drained
    # issue 38: a finding, not a harness failure: the unsettled anomaly with the lag and each partition's last owner
    assert run.errors == [] and len(run.unsettled) == 1 and run.unsettled[0].startswith("the group had not caught up after 4 s")
    [a] = [a for a in s["anomalies"] if a["type"] == "unsettled"]
    assert s["valid"] is False and a["phase"] == "drain" and sum(a["lag"].values()) > 0, a
    assert set(a["last_owner"]) == set(a["lag"]) and set(a["last_owner"].values()) <= {"member-1", "member-2"}, a
    assert s["lost_records"] == 0 and s["unseen_records"] == never, s["anomaly_counts"]
    lag = s["checks"]["unseen"]["lag"]
    assert sum(p["unseen"] for p in lag) == never and all(p["unseen"] > 0 for p in lag)
    top = {(r["topic"], r["partition"]): r["offset"] for r in sorted(rows(run.run_dir / "consumed"), key=lambda r: r["offset"])}
    assert all(p["read_up_to"] is None or p["read_up_to"] >= top.get((p["topic"], p["partition"]), -1) for p in lag)
