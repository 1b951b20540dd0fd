"""Catalog scenarios whose test is a comparison or a failover: a member joining under each assignor (with the
stop-the-world table), the Java eager StickyAssignor, coordinator, controller and leader failover, a broker
isolated from the others, and the zombie window by client and protocol (with its table). Each runs the file
in scenarios/ that users run; the tables are printed (pytest -s) and written beside the runs (--keep-runs DIR:
DIR/tables/, so `make nightly` keeps them in the night's folder; else the test's tmp_path)."""
import pytest

from run_logs import owned_before, rows
from scenario_files import KIP_848, catalog

pytestmark = pytest.mark.cluster


def fault_row(run, kind):
    return [f for f in rows(run.run_dir, "faults") if f["kind"] == kind][-1]


def revoked_between(run, member, t0, t1):
    return {p for e in rows(run.run_dir / "events") if e["member"] == member and e["kind"] in ("revoked", "lost")
            and t0 < e["ts_ms"] < t1 for p in e["partitions"]}


@pytest.fixture
def tables(request, tmp_path):
    keep = request.config.getoption("keep_runs")
    folder = keep / "tables" if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_table(path, title, header, lines) -> str:
    table = "\n".join([f"{title}", "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                       *("| " + " | ".join(str(c) for c in line) + " |" for line in lines)])
    path.write_text(table + "\n")
    print("\n" + table)
    return table


JOINS = [("range", "member-join", {}), ("roundrobin", "member-join", {"assignor": "roundrobin"}),
         ("cooperative-sticky", "member-join", {"assignor": "cooperative-sticky"}), ("sticky (Java)", "java-eager-sticky", {})]


@pytest.mark.slow
def test_a_member_joining_under_each_assignor_and_the_stop_the_world_table(chaos_run, tables):
    """Eager assignors revoke everything from every old member; cooperative-sticky only what moves; the Java
    StickyAssignor, eager too, gives each old member back only partitions it had."""
    lines = []
    for label, name, group in JOINS:
        run = chaos_run(catalog(name, **group))
        assert not run.errors and run.drained, run.errors
        run.assert_no_loss()
        joined = fault_row(run, "member_join")["injected_at_ms"]
        first = [e["ts_ms"] for e in rows(run.run_dir / "events") if e["member"] == "member-4" and e["kind"] == "assigned"
                 and e["partitions"]]
        assert first, f"{label}: member-4 got nothing"
        settled = min(first) + 5_000  # the join's rebalances are over (cooperative: two of them)
        revoked_total = 0
        for member in ("member-1", "member-2", "member-3"):
            before, after = owned_before(run, member, joined), owned_before(run, member, settled)
            revoked = revoked_between(run, member, joined, settled)
            revoked_total += len(revoked)
            if label == "cooperative-sticky":
                assert before and not revoked & after, (label, member, before, revoked, after)
            else:  # eager: stop the world
                assert before and before <= revoked, (label, member, before, revoked)
            if label == "sticky (Java)":
                assert after <= before, f"sticky gave {member} partitions it did not have: {before} -> {after}"
        windows = [(s, e) for w in run.summary["rebalance_figures"]["no_owner_by_partition"] for s, e in w["windows"]
                   if joined <= s < settled]
        rebalances = next(f["rebalances"] for f in run.summary["faults"] if f["kind"] == "member_join")
        lines.append((label, rebalances, revoked_total, f"{max((e - s for s, e in windows), default=0) / 1000:.2f}",
                      f"{sum(e - s for s, e in windows) / 1000:.2f}"))
    write_table(tables / "member-join.md", "member-4 joins a group of 3 (6 partitions): the stop-the-world table",
                ["assignor", "rebalances", "partitions revoked from members that stayed", "longest without owner s",
                 "partition-seconds without owner"], lines)


def coordinator_moved(run, kind):
    row = fault_row(run, kind)
    assert row["coordinator_before"] is not None and row["coordinator_after"] is not None, row
    return row["coordinator_after"] != row["coordinator_before"]


@pytest.mark.parametrize("name, kind, moves", [
    pytest.param("coordinator-isolated", "isolate_broker", True, marks=pytest.mark.slow),
    pytest.param("coordinator-freeze-kip848", "broker_freeze", None, marks=pytest.mark.slow),
    pytest.param("coordinator-crash-kip848", "broker_crash", True, marks=pytest.mark.slow),
    pytest.param("coordinator-isolated-kip848", "isolate_broker", True, marks=pytest.mark.slow),
])
def test_the_group_survives_its_coordinator_failing(chaos_run, name, kind, moves):
    run = chaos_run(catalog(name))
    assert not run.errors and run.drained, run.errors
    if moves:
        assert coordinator_moved(run, kind), fault_row(run, kind)
    assert fault_row(run, kind)["commits_resumed_after_ms"] is not None
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    run.assert_time_to_stable(below_s=120)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["controller-failover", "leader-failover", "broker-isolated"])
def test_a_broker_failing_under_load_loses_nothing(chaos_run, kafka_cluster, name):
    run = chaos_run(catalog(name))
    assert not run.errors and run.drained, run.errors
    row = fault_row(run, "isolate_broker" if name == "broker-isolated" else "broker_crash")
    assert row["healed_at_ms"] is not None
    if name == "controller-failover":
        assert kafka_cluster.active_controller() != kafka_cluster.broker(row["target"]).node_id, "no new controller"
    run.assert_no_loss()
    run.assert_duplicates_within_budget()


ZOMBIES = [("librdkafka", "classic"), ("librdkafka", "consumer"), ("java", "classic"), ("java", "consumer")]


@pytest.mark.slow
def test_the_zombie_window_by_client_and_protocol(chaos_run, tables):
    """member-3 frozen 16 s against a 10 s session: how many records each client hands to the application for
    partitions it no longer owns once it thaws, and for how long."""
    lines = []
    for client, protocol in ZOMBIES:
        group = {"client": client, **(KIP_848 if protocol == "consumer" else {})}
        run = chaos_run(catalog("member-freeze-long", **group))
        assert not run.errors and run.drained, run.errors
        run.assert_no_loss()
        freeze = fault_row(run, "member_freeze")
        had = owned_before(run, "member-3", freeze["injected_at_ms"])
        taken = {p for e in rows(run.run_dir / "events") if e["member"] != "member-3" and e["kind"] == "assigned"
                 and freeze["injected_at_ms"] < e["ts_ms"] < freeze["healed_at_ms"] for p in e["partitions"]}
        assert had and had <= taken, f"{client}/{protocol}: member-3's partitions {had} did not move during the pause"
        zombie = run.summary["rebalance_figures"]["outside_ownership_by_member"].get("member-3")
        lines.append((client, protocol, zombie["records"] if zombie else 0,
                      f"{zombie['window_ms'] / 1000:.2f}" if zombie else "–",
                      f"{(zombie['first_ms'] - freeze['healed_at_ms']) / 1000:.2f}" if zombie else "–"))
    write_table(tables / "zombie-window.md", "member-3 frozen 16 s past a 10 s session: the zombie window",
                ["client", "protocol", "records handed over for partitions it no longer owned", "for s",
                 "first one, s after the thaw"], lines)
