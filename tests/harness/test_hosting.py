"""Member hosts in the scenario and the plan (harness/hosting.py, issue 39): which members share a host and its
lane, and every hosted group that cannot run refused before anything starts, with one error naming the field."""
import pytest

from harness.hosting import FD_HEADROOM, START_SPACING_MS, fd_limit, host_of, start_times
from workloads.kinds import member_kind
from harness.plan import compile_plan
from harness.scenario import ScenarioError, parse_scenario


def hosted(members=6, per_host=4, **group) -> dict:
    return {"consumer_group": {"members": members, "members_per_host": per_host, **group}}


def test_members_fill_hosts_in_order_and_share_their_lane():
    assert [host_of(i, 4) for i in (1, 4, 5, 8, 9)] == ["host-1", "host-1", "host-2", "host-2", "host-3"]
    plan = compile_plan(parse_scenario(hosted()), offline=True)
    assert {h: [m.name for m in ms] for h, ms in plan.hosts.items()} == {
        "host-1": ["member-1", "member-2", "member-3", "member-4"], "host-2": ["member-5", "member-6"]}
    assert plan.lanes == ("host-1", "host-2", "member-7", "member-8", "producer-1")  # spares keep their own lanes
    assert plan.members[4].lane == "host-2" and plan.spares[0].host is None


def test_a_group_without_hosts_keeps_one_process_and_one_lane_a_member():
    plan = compile_plan(parse_scenario({"consumer_group": {"members": 3}}), offline=True)
    assert plan.hosts == {} and plan.member_lanes == ("member-1", "member-2", "member-3")


def test_a_hosted_cut_routes_the_lanes_through_the_request_aware_proxy_and_a_crash_does_not_need_it():
    cut = {"kind": "member_cut", "target": "member-2", "at_s": 1, "duration_s": 1}
    crash = {"kind": "member_crash", "target": "member-2", "at_s": 1, "duration_s": 1}
    assert parse_scenario({**hosted(), "faults": [cut]}).proxies_member_lanes
    assert not parse_scenario({**hosted(), "faults": [crash]}).proxies_member_lanes
    assert not parse_scenario({"consumer_group": {"members": 3}, "faults": [cut]}).proxies_member_lanes


@pytest.mark.parametrize("data, field, words", [
    ({"consumer_group": {"members": 33}}, "consumer_group.members", "set members_per_host"),
    (hosted(client="java"), "consumer_group.members_per_host", "use client: java-member"),
    (hosted(members=[{"count": 3}, {"count": 3, "client": "java-member"}]), "consumer_group.members_per_host", "mixes"),
    (hosted(members=[{"count": 3, "version": "2.16.1"}, {"count": 3}]), "consumer_group.members_per_host", "one client release"),
    (hosted(members=3000, per_host=2000), "consumer_group.members", "1 to 2000"),
    ({**hosted(), "faults": [{"kind": "latency", "target": "member-2", "latency_ms": 5, "at_s": 1, "duration_s": 1}]},
     "faults[0].target", "target the host (host-N)"),
    ({**hosted(), "faults": [{"kind": "latency", "target": "random-member", "latency_ms": 5, "at_s": 1, "duration_s": 1}]},
     "faults[0].target", "shares its lane"),
    ({**hosted(), "run": {"rpc_proxy": False},
      "faults": [{"kind": "member_cut", "target": "member-2", "at_s": 1, "duration_s": 1}]}, "run.rpc_proxy", "client.id"),
    ({"consumer_group": {"client": "java-member", "version": "4.0.0"}}, "consumer_group.version", "client: java"),
])
def test_a_hosted_group_that_cannot_run_is_refused_naming_the_field(data, field, words):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    assert f"{field}:" in str(err.value) and words in str(err.value), str(err.value)


def test_a_host_that_needs_more_open_files_than_the_machine_allows_is_refused():
    per_host = (fd_limit() - FD_HEADROOM) // member_kind("librdkafka").fds_per_member + 1
    if per_host > 2000:
        pytest.skip("this machine's open-file limit holds the largest host")
    with pytest.raises(ScenarioError, match=r"members_per_host: .* open files .*ulimit -Hn"):
        parse_scenario(hosted(members=per_host, per_host=per_host))


def test_toxics_may_target_a_host_lane_and_member_cut_a_hosted_member():
    parse_scenario({**hosted(), "faults": [
        {"kind": "latency", "target": "host-1", "latency_ms": 5, "at_s": 1, "duration_s": 1},
        {"kind": "member_cut", "target": "member-3", "at_s": 3, "duration_s": 1},
        {"kind": "rpc", "target": "member-3", "api": "Heartbeat", "action": "observe", "at_s": 5, "duration_s": 1}]})


def test_a_groups_hosts_take_their_turns_at_the_start_spacing():
    assert start_times(0) == {"start_after_s": 0.0, "start_spacing_s": START_SPACING_MS / 1000}
    assert start_times(50)["start_after_s"] == round(50 * START_SPACING_MS / 1000, 3)
    assert start_times(50, spacing_ms=100) == {"start_after_s": 5.0, "start_spacing_s": 0.1}
    assert start_times(450, spacing_ms=0) == {"start_after_s": 0.0, "start_spacing_s": 0.0}  # a start storm


def test_a_hosted_group_may_set_its_start_spacing_and_shows_the_default_it_runs():
    assert parse_scenario(hosted()).settings()["consumer_group"]["start_spacing_ms"] == START_SPACING_MS
    assert parse_scenario(hosted(start_spacing_ms=0)).consumer_group.effective().start_spacing_ms == 0
    assert parse_scenario({"consumer_group": {"members": 3}}).settings()["consumer_group"]["start_spacing_ms"] is None


def test_a_start_spacing_without_member_hosts_is_refused_naming_the_field():
    with pytest.raises(ScenarioError, match=r"start_spacing_ms: only hosted members"):
        parse_scenario({"consumer_group": {"members": 3, "start_spacing_ms": 50}})
    with pytest.raises(ScenarioError, match=r"start_spacing_ms"):
        parse_scenario(hosted(start_spacing_ms=-1))
