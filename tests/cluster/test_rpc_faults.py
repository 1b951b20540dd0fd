"""Faults on single group requests (issue 11), on the real cluster, for both clients where the API applies: each
test runs the catalog file users run (scenarios/rpc-*.yaml) and reads what the request-aware proxy saw (the
hits of each rpc fault in faults.jsonl) beside what the members logged (events/)."""
import json

import pytest

from run_logs import owned_before, rows
from scenario_files import KIP_848, catalog

pytestmark = pytest.mark.cluster
# make test runs librdkafka on a few of them; make nightly runs every client on every one
CLIENTS = [pytest.param("librdkafka"), pytest.param("java", marks=pytest.mark.slow)]


def rpc_faults(run, target: str | None = None, **params) -> list[dict]:
    """faults.jsonl rows of the run's rpc faults (on `target`, if given) whose params include `params`."""
    return [f for f in rows(run.run_dir, "faults") if f["kind"] == "rpc" and target in (None, f["target"])
            and all(f["params"].get(k) == v for k, v in params.items())]


def events(run, member: str, kind: str, after_ms: int = 0) -> list[dict]:
    return sorted((e for e in rows(run.run_dir / "events") if e["member"] == member and e["kind"] == kind
                   and e["ts_ms"] >= after_ms), key=lambda e: e["ts_ms"])


def assert_whole(run) -> None:
    assert not run.errors and run.drained, run.errors
    run.assert_no_loss()
    run.assert_duplicates_within_budget()


@pytest.mark.slow  # make test's 30 minutes: rpc errors run there in the fenced-member-epoch test below
@pytest.mark.parametrize("client", CLIENTS)
def test_a_heartbeat_answered_rebalance_in_progress_makes_the_member_rejoin_and_the_leader_moves_the_generation(chaos_run, client):
    run = chaos_run(catalog("rpc-heartbeat-rebalance", client=client))
    assert_whole(run)
    (single,) = run.rpc_hits("Heartbeat", "error", target="member-2")
    assert single["member"] == "member-2"
    joins = run.rpc_hits("JoinGroup", "observe")
    assert any(j["member"] == "member-2" and 0 <= j["at_ms"] - single["at_ms"] < 5_000 for j in joins), \
        f"member-2 did not rejoin after its Heartbeat was answered REBALANCE_IN_PROGRESS: {joins}"

    (window,) = rpc_faults(run, action="error", api="Heartbeat", target="group")
    assert (window["label"], window["effect_from"]) == ("rpc Heartbeat error REBALANCE_IN_PROGRESS", "first_hit")
    assert {f["effect_from"] for f in rpc_faults(run, action="observe")} == {"never"}  # issue 24
    group_hits = window["hits"]
    assert group_hits, "no Heartbeat reached the proxy in the group-wide window"
    beats = run.rpc_hits("Heartbeat", "observe")
    before = max(b["generation"] for b in beats if b["at_ms"] < window["injected_at_ms"])
    rejoined = {j["member"] for j in joins if j["at_ms"] >= window["injected_at_ms"]}
    assert rejoined == {"member-1", "member-2", "member-3"}, f"only {rejoined} rejoined after the group-wide errors"
    settled = window["healed_at_ms"] + 5_000
    after = {b["member"]: b["generation"] for b in beats if b["at_ms"] > settled}
    assert after and all(g > before for g in after.values()), f"generation {before} before, Heartbeats after: {after}"


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_an_offset_commit_answered_illegal_generation_fails_the_commit_and_nothing_is_lost(chaos_run, client):
    run = chaos_run(catalog("rpc-commit-illegal-generation", client=client))
    assert_whole(run)
    answered = run.rpc_hits("OffsetCommit", "error")
    assert len(answered) == 3 and {h["member"] for h in answered} == {"member-1"}, answered
    failed = events(run, "member-1", "commit_failed", after_ms=answered[0]["at_ms"])
    assert len(failed) >= len(answered), f"{len(answered)} commits answered ILLEGAL_GENERATION, {len(failed)} commit_failed events"
    # librdkafka names the error; the Java client raises CommitFailedException ("the group has already rebalanced")
    expected = "ILLEGAL_GENERATION" if client == "librdkafka" else "rebalanced"
    assert all(expected in (e.get("detail") or "") for e in failed[:len(answered)]), [e.get("detail") for e in failed]
    rejoined = [j for j in run.rpc_hits("JoinGroup", "observe") if j["member"] == "member-1" and j["at_ms"] >= answered[0]["at_ms"]]
    assert rejoined, "member-1 did not rejoin after its commit was answered ILLEGAL_GENERATION"


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_heartbeats_held_past_the_session_get_a_fetching_member_evicted_and_it_rejoins_after_the_heal(chaos_run, client):
    # commits must not wait on the held connection: async for librdkafka; VerifiableConsumer has auto (async) only
    run = chaos_run(catalog("rpc-heartbeat-held", client=client, **({"commit": "auto"} if client == "java" else {})))
    assert_whole(run)
    (held,) = rpc_faults(run, action="hold", api="Heartbeat")
    assert held["hits"], "no Heartbeat of member-3 was held"
    start, healed = held["hits"][0]["at_ms"], held["healed_at_ms"]
    consumed = [r["consumed_at_ms"] for r in rows(run.run_dir / "consumed") if r["member"] == "member-3"]
    assert any(start < t < start + 5_000 for t in consumed), "member-3 stopped consuming as soon as its Heartbeat was held"
    owned = owned_before(run, "member-3", start)
    takeovers = [e for m in ("member-1", "member-2") for e in events(run, m, "assigned", after_ms=start)
                 if e["ts_ms"] < healed and set(e["partitions"]) & owned]
    assert owned and takeovers, f"the others were not given member-3's {owned} while its Heartbeats were held"
    evicted = min(e["ts_ms"] for e in takeovers)
    back = [e for e in events(run, "member-3", "assigned", after_ms=evicted) if e["partitions"]]
    assert back, "member-3 was not assigned partitions again after it was evicted"
    print(f"\n{client}: member-3 evicted {(evicted - start) / 1000:.1f} s after its first held Heartbeat, assigned again "
          f"{(back[0]['ts_ms'] - start) / 1000:.1f} s after it; the hold was healed after {(healed - start) / 1000:.1f} s")


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_a_syncgroup_delayed_past_the_session_gets_the_member_expired_mid_rebalance_and_it_rejoins(chaos_run, client):
    run = chaos_run(catalog("rpc-syncgroup-delayed", client=client))
    assert_whole(run)
    (delayed,) = run.rpc_hits("SyncGroup", "delay")
    assert delayed["member"] == "member-3"
    lines = [f"{e['ts_ms'] - delayed['at_ms']:>+7} ms {e['kind']} {e.get('partitions') or ''} {e.get('detail') or ''}"
             for e in sorted(rows(run.run_dir / "events"), key=lambda e: e["ts_ms"])
             if e["member"] == "member-3" and e["ts_ms"] >= delayed["at_ms"] - 2_000 and e["kind"] != "committed"]
    print(f"\n{client}: member-3 around its SyncGroup delayed 15 s (0 = the SyncGroup reached the proxy)\n" + "\n".join(lines))
    rejoined = [j for j in run.rpc_hits("JoinGroup", "observe")
                if j["member"] == "member-3" and j["at_ms"] > delayed["at_ms"] + 9_000]
    assert rejoined, "member-3 never joined again after its session ran out"
    assert [e for e in events(run, "member-3", "assigned", after_ms=delayed["at_ms"] + 9_000) if e["partitions"]], \
        "member-3 was not assigned partitions again"
    syncs = [s for s in run.rpc_hits("SyncGroup", "observe") if s["at_ms"] > delayed["at_ms"]]
    assert max(s["generation"] for s in syncs) > delayed["generation"], "no later generation: the expiry did not rebalance"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_consumer_group_heartbeat_answered_fenced_member_epoch_makes_the_member_rejoin_with_epoch_0(chaos_run, client):
    run = chaos_run(catalog("rpc-fenced-member-epoch-kip848", client=client, **KIP_848))
    assert_whole(run)
    (fenced,) = run.rpc_hits("ConsumerGroupHeartbeat", "error")
    assert fenced["member"] == "member-2" and fenced["generation"] > 0, fenced
    following = [h for h in run.rpc_hits("ConsumerGroupHeartbeat", "observe") if h["at_ms"] > fenced["at_ms"]]
    assert following, "member-2 sent no heartbeat after it was fenced"
    assert following[0]["generation"] == 0, f"member-2's next heartbeat carried epoch {following[0]['generation']}, not 0"
    assert following[0]["member_id"] == fenced["member_id"], "KIP-848: the fenced member rejoins with the same member id"
    assert any(h["generation"] > 0 for h in following[1:]), "member-2 never got a new epoch"


@pytest.mark.slow  # make test's 30 minutes: every rpc test above runs through the proxy and asserts no loss
def test_a_run_through_the_proxy_without_rules_consumes_what_a_direct_run_consumes(chaos_run):
    scenario = {"producer": {"records": 20_000, "rate": 4_000}, "consumer_group": {"members": 3}}
    consumed = {}
    for proxied in (True, False):
        run = chaos_run({**scenario, "run": {"rpc_proxy": proxied}})
        assert_whole(run)
        assert run.summary["duplicate_extra_deliveries"] == 0
        assert json.loads((run.run_dir / "cluster.json").read_text())["member_lanes_through_rpc_proxy"] is proxied
        consumed[proxied] = sorted(r["seq"] for r in rows(run.run_dir / "consumed"))
    assert len(consumed[True]) == 20_000
    assert consumed[True] == consumed[False]


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_a_lost_leavegroup_leaves_the_group_waiting_for_the_session_to_run_out(chaos_run, client):
    run = chaos_run(catalog("rpc-leavegroup-lost", client=client))
    assert_whole(run)
    (dropped,) = run.rpc_hits("LeaveGroup", "drop_connection")
    assert dropped["member"] == "member-2"
    (leave,) = [f for f in rows(run.run_dir, "faults") if f["kind"] == "member_leave"]
    owned = owned_before(run, "member-2", leave["injected_at_ms"])  # close() revokes them before it sends LeaveGroup
    taken = [e["ts_ms"] for m in ("member-1", "member-3") for e in events(run, m, "assigned", after_ms=dropped["at_ms"])
             if set(e["partitions"]) & owned]
    assert owned and taken, f"nobody was given member-2's {owned}"
    waited_s = (min(taken) - dropped["at_ms"]) / 1000
    print(f"\n{client}: member-2's partitions reassigned {waited_s:.1f} s after its LeaveGroup was dropped (session 10 s)")
    assert 7 <= waited_s <= 25, f"reassigned after {waited_s:.1f} s: the coordinator heard the leave, or waited too long"
