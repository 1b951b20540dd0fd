"""Issue 52 (3): one registry of member kinds. A kind registered here, from a test, is followed by the scenario's
validation, the plan, hosting, the sweep and the faults' checks, and what it declares it cannot do is refused with
one error naming the field (exit 2 from the CLI), before anything starts."""
import pytest
import yaml

from analysis.api import EVENT_KINDS
from harness.cli import main
from harness.hosting import hosted_settings
from harness.plan import compile_plan
from harness.scenario import ScenarioError, parse_scenario
from harness.sweep.spec import parse_sweep
from workloads import services
from workloads.config import ClientRelease, HostConfig, MemberConfig
from workloads.kinds import KINDS, MemberKind, member_kind, register, unregister

FAKE = MemberKind(
    name="fake", title="fake member", library="librdkafka", about="a kind of a test's",
    module="tests.fake_member", host_module="tests.fake_host", hosted_settings={"fake.setting": 1},
    fds_per_member=2, mb_per_member=1, sweep_name="fakeclient", commit_modes=("sync",), processing_delay=False,
    pattern=False, admin_probe=False, refused_faults={"member_freeze": "it cannot be frozen"})


@pytest.fixture
def fake_kind():
    register(FAKE)
    yield FAKE
    unregister(FAKE.name)


def refusal(data: dict) -> str:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    return str(err.value)


def test_every_kind_the_harness_ships_is_registered_with_what_it_runs():
    assert set(KINDS) >= {"librdkafka", "java", "java-member", "command"}
    for kind in KINDS.values():
        assert (kind.module is None) == kind.command  # a command member runs the user's program
        assert kind.command or kind.module.startswith("workloads.")
        assert (kind.host_module is None) == (not kind.hosts)
        assert kind.commit_modes and kind.events <= set(EVENT_KINDS)  # what the contract knows


def test_an_unknown_kind_is_one_error_naming_the_field_and_the_kinds():
    message = refusal({"consumer_group": {"client": "nope"}})
    assert message.startswith("scenario: consumer_group.client: 'nope' is not a member kind; kinds: librdkafka"), message


def test_a_registered_kind_is_validated_planned_and_hosted(fake_kind):
    scenario = parse_scenario({"consumer_group": {"client": "fake", "commit": "sync", "members": 6,
                                                  "members_per_host": 3}})
    plan = compile_plan(scenario, offline=True)
    assert {m.settings.client for m in plan.members} == {"fake"} and len(plan.hosts) == 2
    assert [c.client for c in plan.clients] == ["fake"]
    assert hosted_settings("fake") == {"fake.setting": 1}


def test_a_kind_refuses_what_it_declares_it_cannot_do_naming_the_field(fake_kind):
    assert refusal({"consumer_group": {"client": "fake", "commit": "async"}}).startswith(
        "scenario: consumer_group.commit: the fake member commits sync only, not async; use client: librdkafka")
    assert "consumer_group.processing: the fake member has no processing delay" in refusal(
        {"consumer_group": {"client": "fake", "commit": "sync", "processing": {"per_batch_ms": 5}}})
    assert "consumer_group.pattern: the fake member subscribes to topics by name" in refusal(
        {"consumer_group": {"client": "fake", "commit": "sync", "pattern": "chaos.*"}})
    freeze = {"kind": "member_freeze", "target": "member-2", "at_s": 1, "duration_s": 1}
    message = refusal({"consumer_group": {"client": "fake", "commit": "sync"}, "faults": [freeze]})
    assert "faults[0].kind: the fake member cannot take member_freeze: it cannot be frozen" in message, message


def test_a_mixed_group_refuses_a_fault_only_on_the_member_whose_kind_cannot_take_it(fake_kind):
    group = {"commit": "sync", "members": [{"count": 1}, {"count": 1, "client": "fake"}]}
    freeze = {"kind": "member_freeze", "at_s": 1, "duration_s": 1}
    parse_scenario({"consumer_group": group, "faults": [{**freeze, "target": "member-1"}]})
    assert "faults[0].kind: the fake member cannot take member_freeze" in refusal(
        {"consumer_group": group, "faults": [{**freeze, "target": "member-2"}]})


def test_the_sweep_runs_a_registered_kind_by_its_sweep_name(fake_kind):
    spec = parse_sweep({"name": "k", "grid": {"members": [10], "styles": ["eager-range"], "triggers": ["join"],
                                              "clients": ["fakeclient"], "repeats": 1}}, "s.yaml")
    (cell,) = spec.cells()
    assert spec.cell_scenario(cell)["consumer_group"]["client"] == "fake"


def test_a_sweep_of_a_client_no_kind_hosts_is_refused():
    with pytest.raises(ScenarioError, match=r"clients: 'fake' is not a client a sweep runs; clients: librdkafka, java"):
        parse_sweep({"name": "k", "grid": {"members": [10], "styles": ["eager-range"], "triggers": ["join"],
                                           "clients": ["fake"]}}, "s.yaml")


def test_the_services_start_a_registered_kind_with_the_modules_it_names(fake_kind, tmp_path):
    config = MemberConfig(member="member-1", run_dir=str(tmp_path), client="fake", release=ClientRelease(),
                          bootstrap_servers="b:1", group_id="g", topics=["t"], pattern=None, metadata_refresh_ms=None,
                          protocol="classic", assignor="range", remote_assignor=None, session_timeout_ms=None,
                          heartbeat_interval_ms=None, max_poll_interval_ms=300_000, commit="sync",
                          auto_commit_interval_ms=5000, processing=None, batch_size=10)
    assert services.member_process(config).module == "tests.fake_member"
    host = HostConfig(host="host-1", run_dir=str(tmp_path), members=[config])
    assert services.host_process(host).module == "tests.fake_host"
    assert member_kind("java-member").member_as_host


def test_the_cli_refuses_a_kinds_refusal_with_exit_2_and_one_line(fake_kind, tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"consumer_group": {"client": "fake", "commit": "auto"}}))
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, out, err)
    assert "consumer_group.commit: the fake member commits sync only, not auto" in err


def test_a_mixed_group_whose_verifiable_consumer_member_cannot_read_several_topics_is_refused():
    """Before the registry only the group's own client was checked against several topics."""
    data = {"topics": [{"name": "a"}, {"name": "b"}],
            "consumer_group": {"commit": "sync", "members": [{"count": 1}, {"count": 1, "client": "java"}]}}
    assert "topics: the Java member (VerifiableConsumer) subscribes to one topic" in refusal(data)
