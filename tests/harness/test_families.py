"""The fault-family ledger (harness/nightly/families.py): what a session or a night really ran, read from its runs."""
import json
import shutil

from harness.nightly.families import all_families, families_under, write_ledger


def a_run(root, name, kinds, real=True):
    d = root / name
    d.mkdir(parents=True)
    (d / "cluster.json").write_text(json.dumps({"cluster_id": "x"} if real else {"planted": True}))
    (d / "faults.jsonl").write_text("".join(json.dumps({"id": str(i), "kind": k, "target": "t", "injected_at_ms": 1,
                                                        **({"params": {"action": a}} if a else {})}) + "\n"
                                            for i, (k, a) in enumerate(kinds)))


def test_only_runs_on_a_real_cluster_count_and_rpc_by_its_action(tmp_path):
    a_run(tmp_path, "a/one", [("broker_crash", None), ("rpc", "hold")])
    a_run(tmp_path, "b/two", [("broker_crash", None), ("rpc", "error")])
    a_run(tmp_path, "c/planted", [("split", None)], real=False)  # an analysis test's planted run
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "faults.jsonl").write_text('{"kind": "split"}\n')  # no cluster.json: a unit test's timeline
    ran = families_under(tmp_path, None)
    assert ran == {"broker_crash": 2, "rpc:hold": 1, "rpc:error": 1}
    ledger = write_ledger(tmp_path / "out" / "families.json", ran, "all")
    assert json.loads((tmp_path / "out" / "families.json").read_text()) == ledger
    assert "split" in ledger["not_run"] and "broker_crash" not in ledger["not_run"]
    assert set(ledger["not_run"]) | set(ran) == set(all_families())
    shutil.rmtree(tmp_path / "a"), shutil.rmtree(tmp_path / "b")  # not to be counted in this session's own ledger


def test_every_kind_is_a_family_and_rpc_is_its_actions():
    families = all_families()
    assert "rpc" not in families and {"rpc:hold", "rpc:delay", "rpc:error", "rpc:drop_connection", "rpc:observe"} <= set(families)
    assert {"rolling_restart", "partition_pair", "disk_full", "broker_restart"} <= set(families)
