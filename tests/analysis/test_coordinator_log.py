"""Issue 40: each JoinGroup/SyncGroup round with its leader and the members that joined late, and each KIP-848
epoch with its cause and the target assignment's computation, as the group's coordinator logged them
(coordinator.log, analysis/rundir/coordinator_log.py). The sentences are Kafka 4.3's and 3.x's, copied from real broker logs."""
from pathlib import Path

from analysis.rundir import coordinator_log
from analysis.rundir.history import History
from analysis_runs import T0

G = "chaos-group-f27426"
U = "-96761621-2db5-4623-894f-c9aacef4a83b"  # a member id's UUID tail
C4 = "INFO [GroupCoordinator id=2 topic=__consumer_offsets partition=2]"
CLASS = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"


def line(ms: int, text: str, prefix: str = C4, cls: str = CLASS) -> str:
    s, frac = divmod(ms, 1000)
    return f"[2026-11-28 09:52:{46 + s:02d},{frac:03d}] {prefix} {text}{cls}"


def parsed(tmp_path, lines: list[str]):
    (tmp_path / "coordinator.log").write_text("\n".join(lines) + "\n")
    return coordinator_log.read(tmp_path)


EAGER_JOIN = [
    line(0, f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 1 (reason: Adding new "
            f"member member-4{U} with group instance id null; client reason: not provided)."),
    line(50, f"Pending dynamic member with id member-5{U} joins group {G} in PreparingRebalance state. Adding to the group now."),
    line(600, f"Stabilized group {G} generation 2 with 5 members."),
    line(610, f"Pending dynamic member with id member-6{U} joins group {G} in CompletingRebalance state. Adding to the group now."),
    line(640, f"Assignment received from leader member-1{U} for group {G} for generation 2. The group has 5 members, 0 of which are static."),
    line(700, f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 2 (reason: Adding new "
              f"member member-6{U} with group instance id null; client reason: not provided)."),
    line(900, f"Group {G} removed dynamic members who haven't joined: [member-3{U}]"),
    line(950, f"Stabilized group {G} generation 3 with 5 members."),
]


def test_a_round_has_its_reason_generation_leader_phases_and_its_late_joiners(tmp_path):
    first, second = coordinator_log.rounds(parsed(tmp_path, EAGER_JOIN))
    assert first["reason"] == "Adding new member member-4 with group instance id null; client reason: not provided"
    assert (first["old_generation"], first["generation"], first["members"], first["leader"]) == (1, 2, 5, "member-1")
    assert (first["join_ms"], first["sync_ms"]) == (600, 40)
    assert first["joined"] == ["member-5"] and first["late"] == ["member-6"] and first["not_rejoined"] == []
    # the second round: started by the late joiner; member-3 removed for not rejoining; no assignment yet
    assert second["not_rejoined"] == ["member-3"] and second["join_ms"] == 250
    assert second["leader"] is None and second["sync_ms"] is None and second["generation"] == 3


def test_kafka_3_sentences_name_the_offsets_partition_and_are_read_the_same(tmp_path):
    c3 = "INFO [GroupCoordinator 1]:"
    lines = [line(0, f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 4 "
                     f"(__consumer_offsets-2) (reason: removing member member-2{U} on heartbeat expiration)", c3, ""),
             line(30, f"Stabilized group {G} generation 5 (__consumer_offsets-2) with 3 members", c3, ""),
             line(35, f"Assignment received from leader client member-1{U} for group {G} for generation 5. The group "
                      f"has 3 members, 0 of which are static.", c3, "")]
    [r] = coordinator_log.rounds(parsed(tmp_path, lines))
    assert r["reason"] == "removing member member-2 on heartbeat expiration"
    assert (r["generation"], r["members"], r["leader"], r["join_ms"], r["sync_ms"]) == (5, 3, "member-1", 30, 5)


def test_a_round_the_last_member_left_ends_in_an_empty_group(tmp_path):
    """Issue 51, item 10: no member was left to wait for (the last one left while the round waited): the round
    ends at ``is now empty`` (Kafka 4.3's sentence, and 3.x's with the offsets partition), never stabilized."""
    c3 = "INFO [GroupCoordinator 1]:"
    lines = [line(0, f"Preparing to rebalance group {G} in state Stable with old generation 7 (reason: removing member "
                     f"member-1{U} on LeaveGroup; client reason: the consumer is being closed)."),
             line(0, f"Group {G} with generation 8 is now empty."),
             line(500, f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 8 "
                       f"(__consumer_offsets-2) (reason: removing member member-2{U} on LeaveGroup)", c3, ""),
             line(502, f"Group {G} with generation 9 is now empty (__consumer_offsets-2)", c3, "")]
    first, second = coordinator_log.rounds(parsed(tmp_path, lines))
    assert (first["emptied_ms"] - first["began_ms"], first["stable_ms"], first["generation"]) == (0, None, None)
    assert second["emptied_ms"] - second["began_ms"] == 2 and second["join_ms"] is None
    assert coordinator_log.rounds(parsed(tmp_path, EAGER_JOIN))[0]["emptied_ms"] is None


def test_a_static_member_is_named_by_its_instance_id(tmp_path):
    lines = [line(0, f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 0 (reason: "
                     f"Adding new member instance-5{U} with group instance id instance-5; client reason: not provided)."),
             line(5, f"Stabilized group {G} generation 1 with 1 members."),
             line(9, f"Assignment received from leader instance-5{U} for group {G} for generation 1. The group has 1 "
                     f"members, 1 of which are static.")]
    [r] = coordinator_log.rounds(parsed(tmp_path, lines), {"instance-5": "member-5"})
    assert r["leader"] == "member-5" and r["static"] == 1 and "member member-5 with" in r["reason"]


KIP848 = [
    line(0, f"[GroupId {G}] Member lSYYCHjWQCCy0FJUe0Aimw joins the consumer group using the consumer protocol."),
    line(0, f"[GroupId {G}] Bumped group epoch to 2 with metadata hash -1271495728086622866."),
    line(1, f"[GroupId {G}] Member 8HuPqnIyT42JeDRAvr0WZA joins the consumer group using the consumer protocol."),
    line(1, f"[GroupId {G}] Bumped group epoch to 3 with metadata hash -1271495728086622866."),
    line(2, f"[GroupId {G}] Computed a new target assignment for epoch 3 with 'uniform' assignor in 12ms."),
    line(900, f"[GroupId {G}] Member 8HuPqnIyT42JeDRAvr0WZA fenced from the group because the member session expired."),
    line(900, f"[GroupId {G}] Bumped group epoch to 4 with metadata hash -1271495728086622866."),
    line(901, f"[GroupId {G}] Computed a new target assignment for epoch 4 with 'uniform' assignor in 3ms."),
]


def test_a_kip848_epoch_has_its_cause_named_by_the_sampled_member_ids_and_its_computation(tmp_path):
    ids = {"lSYYCHjWQCCy0FJUe0Aimw": "member-1", "8HuPqnIyT42JeDRAvr0WZA": "member-2"}
    two, three, four = coordinator_log.epochs(parsed(tmp_path, KIP848), ids)
    assert (two["epoch"], two["cause"], two["assign_ms"]) == (2, "member-1 joined", None)
    assert (three["cause"], three["assign_ms"], three["assignor"]) == ("member-2 joined", 12, "uniform")
    assert four["cause"] == "member-2 fenced: the member session expired" and four["assign_ms"] == 3


def test_the_summary_names_members_from_the_sampler_and_the_window_sums_the_phases(tmp_path):
    h = History(coordinator=parsed(tmp_path, EAGER_JOIN + KIP848),
                group_states=[{"ts_ms": T0, "kind": "state", "member_ids": {"lSYYCHjWQCCy0FJUe0Aimw": "member-1"}}])
    found = coordinator_log.summary(h)
    assert found["epochs"][0]["cause"] == "member-1 joined" and len(found["rounds"]) == 2
    start = found["rounds"][0]["began_ms"]
    cost = coordinator_log.in_window(found, start, start + 800)  # the first round, the second (at 700), the epochs (0-1 ms)
    assert cost == {"coordinator_rounds": 2 + 2, "join_phase_ms": 600 + 250, "assignment_ms": 40 + 12}
    assert coordinator_log.in_window(None, 0, 1) == {"coordinator_rounds": None, "join_phase_ms": None, "assignment_ms": None}
    assert coordinator_log.expired_between(found, start, start + 800) == 0  # member-2's session expired at 900
    assert coordinator_log.expired_between(found, start, start + 1000) == 1
    assert coordinator_log.expired_between(None, 0, 1) is None


def test_an_expired_session_is_read_from_either_protocols_sentence_and_a_leave_is_not_one(tmp_path):
    lines = parsed(tmp_path, [
        line(0, f"Member member-25{U} in group {G} has failed, removing it from the group."),  # classic, Kafka 4.3
        line(5, f"[GroupId {G}] Member NFeN6ekCQ3WCqCF1mjvO1Q fenced from the group because the member session expired."),
        line(9, f"[GroupId {G}] Member 8HuPqnIyT42JeDRAvr0WZA left the consumer group."),
        line(9, f"[GroupId {G}] Member lSYYCHjWQCCy0FJUe0Aimw fenced from the group because it failed to transition "
                f"from epoch 5 within 30000ms."),  # the rebalance timeout: not a session
        line(12, f"[GroupId {G}] Member 8HuPqnIyT42JeDRAvr0WZA fenced from the group because its session expired."),  # 3.7's
    ])
    found = coordinator_log.expired(lines, {"NFeN6ekCQ3WCqCF1mjvO1Q": "member-7"})
    assert [e["member"] for e in found] == ["member-25", "member-7", "8HuPqnIyT42JeDRAvr0WZA"]
    assert found[1]["at_ms"] - found[0]["at_ms"] == 5


def test_a_run_without_the_file_has_no_rounds(tmp_path):
    assert coordinator_log.read(tmp_path) is None and coordinator_log.summary(History()) is None


STREAMS_LOG = Path(__file__).parent / "data" / "coordinator-streams-4.3.1.log"  # a real 4.3.1 run's (issue 55)


def test_a_streams_group_epoch_has_its_cause_and_computation_from_a_recorded_4_3_1_log(tmp_path):
    """KIP-1071's sentences (`Bumped streams group epoch to N`, `[MemberId M] Member joins the streams group.`,
    `Streams member M fenced ...`), copied whole from a 4.3.1 broker: the streams group's epochs read as KIP-848's."""
    (tmp_path / "coordinator.log").write_bytes(STREAMS_LOG.read_bytes())
    lines = coordinator_log.read(tmp_path)
    found = coordinator_log.epochs(lines, {"YCSr67g5TlyXPHzrN9BWIA": "member-2"})
    assert [e["epoch"] for e in found] == [2, 3, 4, 5, 7]
    assert (found[0]["cause"], found[0]["assignor"], found[0]["assign_ms"]) == ("member-2 joined", "sticky", 4)
    assert [e["member"] for e in coordinator_log.expired(lines, {"YCSr67g5TlyXPHzrN9BWIA": "member-2"})] == ["member-2"]
