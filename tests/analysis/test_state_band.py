"""Issue 40, item 4: the group's state machine for the report's band (analysis/state_band.py), from a planted
group-states.jsonl and the members' events: observed states with the classic generation the members logged, the
CompletingRebalance no sample saw inferred and marked, KIP-848 segments with their epochs."""
from analysis import history, state_band
from analysis_runs import T0, Run


def classic_join(r: Run) -> Run:
    """a and b stable in generation 1; c joins: PreparingRebalance seen at 5.0-5.5 s, Stable again from 6.0 s; the
    members log generation 2's assignment at 5.8 s. No sample saw CompletingRebalance."""
    for m in ("a", "b", "c"):
        r.event(m, "started", 0 if m != "c" else 4_900, client="librdkafka", protocol="classic", assignor="range")
    r.event("a", "assigned", 1_000, ["t:0", "t:1"], generation=1).event("b", "assigned", 1_000, ["t:2", "t:3"], generation=1)
    for m, parts in (("a", ["t:0", "t:1"]), ("b", ["t:2", "t:3"])):
        r.event(m, "revoked", 5_100, parts, generation=1)
    r.event("a", "assigned", 5_800, ["t:0"], generation=2).event("b", "assigned", 5_800, ["t:2", "t:3"], generation=2)
    r.event("c", "assigned", 5_800, ["t:1"], generation=2)
    r.group_state(0, "sampler", interval_ms=500, protocol="classic", api="DescribeGroups v5")
    r.group_state(200, state="Empty", members=0, assigned=0, since=0)
    r.group_state(1_200, state="Stable", members=2, assigned=4, since=700)
    r.group_state(5_000, state="PreparingRebalance", members=3, assigned=4, since=4_500)
    r.group_state(6_000, state="Stable", members=3, assigned=4, since=5_500)
    r.group_state(9_000, "sampler_end", samples=18)
    return r


def test_a_join_shows_preparing_then_an_inferred_completing_then_stable_with_a_rising_generation(tmp_path):
    h = history.build(classic_join(Run(tmp_path / "run")).write())
    band = state_band.band(h, T0 + 9_000)
    observed = [(s["state"], s.get("generation")) for s in band["segments"]]
    assert observed == [("Empty", None), ("Stable", 1), ("PreparingRebalance", 1), ("Stable", 2)]
    (inferred,) = band["inferred"]
    assert inferred["state"] == "CompletingRebalance" and inferred["generation"] == 2 and not inferred["observed"]
    assert (inferred["from_ms"], inferred["to_ms"]) == (T0 + 5_500, T0 + 5_800)  # the last PR sample, the assignment
    assert band["interval_ms"] == 500 and band["segments"][-1]["to_ms"] == T0 + 9_000


def test_an_observed_completing_rebalance_is_not_inferred_again(tmp_path):
    r = classic_join(Run(tmp_path / "run"))
    r.group_states.insert(4, {"ts_ms": T0 + 5_600, "kind": "state", "state": "CompletingRebalance", "members": 3,
                              "assigned": 4, "since_ms": T0 + 5_500})
    band = state_band.band(history.build(r.write()), T0 + 9_000)
    assert [s["state"] for s in band["segments"]][2:4] == ["PreparingRebalance", "CompletingRebalance"]
    assert band["inferred"] == []


def test_a_kip848_group_carries_its_epochs_and_the_members_behind_the_target(tmp_path):
    r = Run(tmp_path / "run")
    r.event("a", "started", 0, client="librdkafka", protocol="consumer")
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v0")
    r.group_state(1_000, state="Stable", members=2, assigned=4, group_epoch=2, assignment_epoch=2,
                  member_epochs={"member-1": 2, "member-2": 2}, since=500)
    r.group_state(5_000, state="Reconciling", members=3, assigned=4, group_epoch=3, assignment_epoch=3,
                  member_epochs={"member-1": 3, "member-2": 2, "member-3": 3}, since=4_500)
    r.group_state(6_000, state="Stable", members=3, assigned=4, group_epoch=3, assignment_epoch=3,
                  member_epochs={"member-1": 3, "member-2": 3, "member-3": 3}, since=5_500)
    band = state_band.band(history.build(r.write()), T0 + 7_000)
    got = [(s["state"], s["group_epoch"], s["assignment_epoch"], s["behind"]) for s in band["segments"]]
    assert got == [("Stable", 2, 2, 0), ("Reconciling", 3, 3, 1), ("Stable", 3, 3, 0)]
    assert band["inferred"] == [] and all("generation" not in s for s in band["segments"])
    # each member's own epoch: member-2 was behind the target (its epoch 2, the target 3) from 5 s to 6 s
    epochs = {m["member"]: m for m in band["member_epochs"]}
    assert epochs["member-2"]["behind"] == [[T0 + 5_000, T0 + 6_000, 2, 3]]
    assert epochs["member-1"]["behind"] == [] and epochs["member-3"]["first_ms"] == T0 + 5_000
    assert epochs["member-1"]["last_ms"] == T0 + 7_000


def test_a_run_without_samples_has_no_band(tmp_path):
    r = Run(tmp_path / "run")
    r.event("a", "started", 0, client="librdkafka", protocol="classic")
    assert state_band.band(history.build(r.write()), T0) is None
