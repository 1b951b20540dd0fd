"""The bug zoo (scenarios/zoo/, issue 12): each file valid, and its opening comment names the upstream issue, the
affected and fixed releases, the mechanism and what to expect, and pins the affected release."""
from pathlib import Path

import pytest

from harness.scenario import catalog, parse_scenario, unique_names
from harness.zoo.runner import on_side

ZOO = catalog(Path(__file__).resolve().parents[2] / "scenarios" / "zoo")


def test_the_zoo_has_files():
    assert ZOO


@pytest.mark.parametrize("path, scenario", ZOO, ids=[p.name for p, _ in ZOO])
def test_each_zoo_file_says_what_bug_where_and_what_to_expect(path, scenario):
    comment = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    for heading in ("Upstream:", "Affected:", "Fixed in:", "Mechanism:", "Expected:"):
        assert heading in comment, f"{path.name}: no {heading!r} in its comment"
    zoo = scenario.zoo
    assert zoo is not None, f"{path.name}: no zoo: block (bug, releases, status, rate, why, signature)"
    assert zoo.affected in comment.split("Affected:")[1].split("\n")[0], f"{path.name}: the comment's affected release"
    assert (zoo.fixed or "no fix") in comment.split("Fixed in:")[1].split("\n")[0], f"{path.name}: the comment's fixed release"
    if zoo.contrast is not None:
        assert "Contrast: " in comment and zoo.contrast.client in comment.split("Contrast:")[1].split("\n")[0], \
            f"{path.name}: a 'Contrast:' line naming the contrast's client kind and why it has not the bug"
    pinned = scenario.cluster.kafka_version if zoo.swap == "brokers" else scenario.consumer_group.version
    assert pinned == zoo.affected
    assert zoo.why.count(".") >= 2, f"{path.name}: zoo.why: two sentences on why the signature is the mechanism"
    assert scenario.name == path.stem and scenario.description


@pytest.mark.parametrize("path, scenario", ZOO, ids=[p.name for p, _ in ZOO])
def test_each_zoo_file_runs_on_both_releases_with_names_of_its_own(path, scenario):
    """What `kafka-chaos zoo` and the plugin run: the fixed release (or the contrast's client kind) swapped in, and
    every topic name (the members' own subscriptions too) suffixed for a shared cluster."""
    for side, release in scenario.zoo.releases:
        run = parse_scenario(unique_names(on_side(scenario, side), "abc123"), path.name)
        if side == "contrast":
            assert run.consumer_group.client == release and run.consumer_group.version is None
            assert scenario.zoo.contrast.config.items() <= run.consumer_group.config.items()
        else:
            swapped = run.cluster.kafka_version if scenario.zoo.swap == "brokers" else run.consumer_group.version
            assert swapped == release
        assert run.zoo is None
        assert scenario.zoo.resolved(run.settings())  # every threshold resolves against the run's own settings
        assert all(t.name.endswith("-abc123") for t in run.topics)
        assert all(t.endswith("-abc123") for spec in run.consumer_group.member_specs() for t in spec.topics or [])


def test_kafka_chaos_zoo_refuses_bad_input_before_anything_starts(capsys):
    from harness.cli import EXIT_BAD_INPUT, main
    assert main(["zoo", "KAFKA-1"]) == EXIT_BAD_INPUT
    assert "BUG: 'KAFKA-1' is not in the zoo; it has KAFKA-14024" in capsys.readouterr().err
    assert main(["zoo", "--repeat", "0"]) == EXIT_BAD_INPUT
    assert "--repeat: at least 1 run" in capsys.readouterr().err


def test_kafka_chaos_zoo_lists_each_bug_with_its_releases(capsys):
    from harness.cli import main
    assert main(["zoo", "--list", "kafka-14024"]) == 0
    assert capsys.readouterr().out.split() == ["KAFKA-14024", "client", "3.2.0", "->", "3.2.1", "expect", "reproduced",
                                               "(90%)", "kafka-14024.yaml"]


def test_kafka_chaos_zoo_refuses_a_folder_without_zoo_files(tmp_path, capsys):
    from harness.cli import EXIT_BAD_INPUT, main
    assert main(["zoo", "--dir", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "has no zoo files" in capsys.readouterr().err
    (tmp_path / "plain.yaml").write_text("name: plain\n")
    assert main(["zoo", "--dir", str(tmp_path), "--list"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "plain.yaml: zoo: the file has no zoo block" in err and "Traceback" not in err


ZOO_BLOCK = {"bug": "KAFKA-1", "upstream": "u", "fix": "f", "affected": "3.2.0", "fixed": "3.2.1", "status": "reproduced",
             "rate": 0.9, "why": "A sentence that says why. Another one that says why not elsewhere.",
             "signature": [{"anomaly": "stall", "where": {"stalled_ms": {"ge": "0.5 * consumer_group.max_poll_interval_ms"}}}]}


def _zoo_scenario(**zoo):
    return {"consumer_group": {"client": "java", "version": "3.2.0", "max_poll_interval_ms": 30000},
            "zoo": {**ZOO_BLOCK, **zoo}}


def test_a_signature_threshold_is_resolved_from_the_scenario_settings():
    s = parse_scenario(_zoo_scenario(), "x.yaml")
    assert s.zoo.resolved(s.settings()) == [{"anomaly": "stall", "where": {"stalled_ms": {"ge": 15000.0}}, "never_after": []}]


@pytest.mark.parametrize("zoo, field", [
    ({"signature": [{"anomaly": "stall", "where": {"stalled_ms": {"ge": 24000}}}]}, "zoo.signature[0].where.stalled_ms.ge"),
    ({"signature": [{"anomaly": "stall", "where": {"stalled_ms": {"ge": "0.5 * consumer_group.nope_ms"}}}]}, "no setting"),
    ({"signature": [{"anomaly": "stal"}]}, "zoo.signature[0].anomaly"),
    ({"signature": [{"event": "lots"}]}, "zoo.signature[0].event"),
    ({"signature": [{"anomaly": "stall", "event": "lost"}]}, "one of them"),
    ({"signature": [{"event": "revoked", "after": {"event": "commit_failed", "within_ms": 1000}}]}, "after.within_ms"),
    # VerifiableConsumer reports a lost partition as revoked (its listener's default): it writes no `lost`
    ({"signature": [{"event": "lost"}]}, "zoo.signature[0].event: no member of this group writes 'lost' events"),
    ({"signature": []}, "signature"),
    ({"rate": 1.0}, "rate"),
    ({"status": "open"}, "status: open means no fix"),
    ({"status": "not_reproduced"}, "rate"),
    ({"fixed": "3.1.0"}, "zoo.fixed"),
    ({"affected": "3.2.2"}, "zoo.affected"),
    ({"why": "short"}, "why"),
])
def test_a_bad_zoo_block_is_one_error_naming_the_field(zoo, field):
    from harness.scenario import ScenarioError
    with pytest.raises(ScenarioError) as err:
        parse_scenario(_zoo_scenario(**zoo), "x.yaml")
    assert field in str(err.value)
    assert "\n" not in str(err.value).strip() or len(str(err.value).splitlines()) <= 3


OPEN_WITH_CONTRAST = {"bug": "unreported:librdkafka-kip848-lost-assignment",
                      "upstream": "docs/upstream/librdkafka-kip848-lost-assignment.md", "swap": "client_kind",
                      "affected": "2.16.1", "contrast": {"client": "java-member", "config": {"request.timeout.ms": 1000}},
                      "status": "open", "rate": 0.9, "why": ZOO_BLOCK["why"], "signature": [{"anomaly": "unapplied_assignment"}]}


def _contrast_scenario(**zoo):
    block = {k: v for k, v in {**OPEN_WITH_CONTRAST, **zoo}.items() if v is not None}
    return {"consumer_group": {"protocol": "consumer", "version": "2.16.1"}, "zoo": block}


def test_an_unreported_open_bug_runs_beside_another_client_kind():
    """No fixed release: the contrast is the same scenario on the Java member program, its settings laid over the
    group's, which must never show the signature."""
    s = parse_scenario(_contrast_scenario(), "x.yaml")
    assert s.zoo.releases == (("affected", "2.16.1"), ("contrast", "java-member"))
    contrast = parse_scenario(on_side(s, "contrast"), "x.yaml")
    assert (contrast.consumer_group.client, contrast.consumer_group.version) == ("java-member", None)
    assert contrast.consumer_group.config == {"request.timeout.ms": 1000}
    affected = parse_scenario(on_side(s, "affected"), "x.yaml")
    assert (affected.consumer_group.client, affected.consumer_group.version) == ("librdkafka", "2.16.1")


@pytest.mark.parametrize("zoo, field", [
    ({"contrast": None}, "contrast: swap client_kind"),
    ({"swap": "client"}, "contrast: swap client_kind"),
    ({"contrast": {"client": "jav"}}, "zoo.contrast.client: 'jav' is not a client kind"),
    ({"contrast": {"client": "librdkafka"}}, "zoo.contrast.client: librdkafka is the group's own client"),
    ({"contrast": {"client": "java-member", "version": "4.3.1"}}, "zoo.contrast.version"),
    ({"bug": "librdkafka#1", "upstream": "u", "status": "reproduced", "fix": "f", "fixed": "2.16.2"},
     "status: a client-kind contrast stands in for a fixed release"),
    ({"upstream": "https://github.com/confluentinc/librdkafka/issues"}, "upstream: an unreported bug points at its report"),
    ({"bug": "unreported:nowhere", "upstream": "docs/upstream/nowhere.md"}, "docs/upstream/nowhere.md does not exist"),
    ({"swap": "client", "contrast": None, "status": "intermittent", "fix": "f", "fixed": "2.16.2"},
     "status: an unreported bug has no fix upstream"),
    ({"bug": "unreported:Lost Assignment"}, "zoo.bug"),
])
def test_a_bad_contrast_or_unreported_bug_is_one_error_naming_the_field(zoo, field):
    from harness.scenario import ScenarioError
    with pytest.raises(ScenarioError) as err:
        parse_scenario(_contrast_scenario(**zoo), "x.yaml")
    assert field in str(err.value)
    assert len(str(err.value).splitlines()) <= 3
