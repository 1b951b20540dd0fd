"""Issue 40, item 4: the group's state machine for the report's band (analysis/figures/state_band.py), from a planted
group-states.jsonl and the members' events: sampled states with the classic generation the members logged, the
CompletingRebalance no sample saw inferred and marked, KIP-848 segments with their epochs. Issue 51, item 10: where
coordinator.log has a round, its PreparingRebalance and CompletingRebalance come from the log (source ``log``), to
the millisecond, and a round shorter than a sample is in the band."""
from analysis.rundir import coordinator_log
from analysis.rundir import history
from analysis.figures import state_band
from analysis_runs import T0, Run

U = "-96761621-2db5-4623-894f-c9aacef4a83b"  # a member id's UUID tail


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
    assert {s["source"] for s in band["segments"]} == {"sampled"}  # no coordinator.log: the samples alone
    (inferred,) = band["inferred"]
    assert inferred["state"] == "CompletingRebalance" and inferred["generation"] == 2 and inferred["source"] == "inferred"
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


def a_round(r: Run, began: int, stabilized: int, assigned: int | None, old: int, joined: str) -> Run:
    """A classic round in coordinator.log, in Kafka 4.3's sentences: ``joined`` began it; generation ``old`` + 1."""
    r.coordinator_line(began, f"Preparing to rebalance group g in state Stable with old generation {old} (reason: "
                              f"Adding new member {joined}{U} with group instance id null; client reason: not provided).")
    r.coordinator_line(stabilized, f"Stabilized group g generation {old + 1} with 3 members.")
    if assigned is not None:
        r.coordinator_line(assigned, f"Assignment received from leader member-1{U} for group g for generation "
                                     f"{old + 1}. The group has 3 members, 0 of which are static.")
    return r


def band_of(r: Run, end: int = 9_000) -> dict:
    h = history.build(r.write())
    return state_band.band(h, T0 + end, coordinator_log.summary(h)["rounds"])


def spans(band: dict) -> list[tuple]:
    return [(s["state"], s["source"], s["from_ms"] - T0, s["to_ms"] - T0, s.get("generation")) for s in band["segments"]]


def test_a_round_shorter_than_a_sample_is_in_the_band_from_the_coordinators_log(tmp_path):
    """Sampled every 500 ms, the sampler saw Stable before and after c's join; the round (5,100-5,180 ms) and its
    40 ms CompletingRebalance lie between two samples. The log draws both, to the millisecond."""
    r = classic_join(Run(tmp_path / "run"))
    r.group_states[3:5] = [{"ts_ms": T0 + 5_500, "kind": "state", "state": "Stable", "members": 3, "assigned": 4,
                            "since_ms": T0 + 5_000}]
    a_round(a_round(r, 300, 900, 950, 0, "a"), 5_100, 5_140, 5_180, 1, "c")
    band = band_of(r)
    assert spans(band) == [("Empty", "sampled", 200, 300, None), ("PreparingRebalance", "log", 300, 900, 0),
                           ("CompletingRebalance", "log", 900, 950, 1), ("Stable", "log", 950, 1_200, 1),
                           ("Stable", "sampled", 1_200, 5_100, 1), ("PreparingRebalance", "log", 5_100, 5_140, 1),
                           ("CompletingRebalance", "log", 5_140, 5_180, 2), ("Stable", "log", 5_180, 5_500, 2),
                           ("Stable", "sampled", 5_500, 9_000, 2)]
    assert band["inferred"] == []  # nothing to infer: the log has the round
    preparing = band["segments"][5]
    assert preparing["reason"].startswith("Adding new member c with") and preparing["members"] is None
    assert band["segments"][6]["members"] == 3 and band["segments"][4]["last_seen_ms"] == T0 + 5_000


def test_samples_that_saw_a_logged_round_give_way_to_the_log(tmp_path):
    """The sampler saw PreparingRebalance at 5.0 s and, a few ms after the leader's assignment was logged (5,750),
    still CompletingRebalance (the group turns Stable once the assignment is stored): both samples are the log's
    round, which dates its states; nothing is inferred, and no sampled rebalance state follows the round."""
    r = classic_join(Run(tmp_path / "run"))
    r.group_states.insert(4, {"ts_ms": T0 + 5_760, "kind": "state", "state": "CompletingRebalance", "members": 3,
                              "assigned": 4, "since_ms": T0 + 5_500})
    r.group_states[5]["since_ms"] = T0 + 5_760
    a_round(r, 4_900, 5_700, 5_750, 1, "c")
    band = band_of(r)
    assert spans(band)[1:] == [("Stable", "sampled", 1_200, 4_900, 1), ("PreparingRebalance", "log", 4_900, 5_700, 1),
                               ("CompletingRebalance", "log", 5_700, 5_750, 2), ("Stable", "log", 5_750, 6_000, 2),
                               ("Stable", "sampled", 6_000, 9_000, 2)]
    assert band["inferred"] == [] and band["segments"][1]["last_seen_ms"] == T0 + 4_500


def test_a_round_superseded_while_completing_and_one_that_emptied_the_group_are_drawn_as_logged(tmp_path):
    """d joins while the leader computes the assignment: the coordinator goes from CompletingRebalance back to
    PreparingRebalance (a new round), then Stable. At the end the last member leaves during a round: Empty."""
    r = classic_join(Run(tmp_path / "run"))
    r.group_states[3:5] = []  # no sample saw any of it
    a_round(r, 5_000, 5_100, None, 1, "c")
    a_round(r, 5_130, 5_300, 5_320, 2, "d")
    r.coordinator_line(8_000, f"Preparing to rebalance group g in state Stable with old generation 3 (reason: "
                              f"removing member member-1{U} on LeaveGroup; client reason: the consumer is being closed).")
    r.coordinator_line(8_000, "Group g with generation 4 is now empty.")
    band = band_of(r)
    assert spans(band)[2:] == [("PreparingRebalance", "log", 5_000, 5_100, 1), ("CompletingRebalance", "log", 5_100, 5_130, 2),
                               ("PreparingRebalance", "log", 5_130, 5_300, 2), ("CompletingRebalance", "log", 5_300, 5_320, 3),
                               ("Stable", "log", 5_320, 8_000, 3), ("PreparingRebalance", "log", 8_000, 8_000, 3),
                               ("Empty", "log", 8_000, 9_000, None)]


def test_a_kip848_band_has_no_rounds_and_stays_sampled(tmp_path):
    r = Run(tmp_path / "run")
    r.event("a", "started", 0, client="librdkafka", protocol="consumer")
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v0")
    r.group_state(1_000, state="Stable", members=1, assigned=4, group_epoch=1, assignment_epoch=1,
                  member_epochs={"member-1": 1}, since=500)
    r.coordinator_line(900, "[GroupId g] Bumped group epoch to 1 with metadata hash 12.")
    band = band_of(r, 2_000)
    assert spans(band) == [("Stable", "sampled", 1_000, 2_000, None)]
