"""`kafka-chaos rates` (harness/zoo/rates.py): combinations of settings, each checked before any run; the tally of
analysed runs with Wilson intervals; a page filled from the table. Runs planted as analysis summaries: the real
runs are the KAFKA-17754 table's (docs/kafka-17754.md, tests/cluster/test_kafka_17754.py)."""
import json
from pathlib import Path

import pytest

from harness.bad_input import ScenarioError
from harness.cli import main
from harness.zoo import rates

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "eos-endtxn-delay.yaml"


def test_every_combination_in_order_the_first_key_slowest():
    varied = rates.parse_vary(["consumer_group.client=librdkafka,java-member", "cluster.transaction_version=1,2"])
    assert varied == [("consumer_group.client", ["librdkafka", "java-member"]), ("cluster.transaction_version", [1, 2])]
    assert rates.combinations(varied) == [
        {"consumer_group.client": "librdkafka", "cluster.transaction_version": 1},
        {"consumer_group.client": "librdkafka", "cluster.transaction_version": 2},
        {"consumer_group.client": "java-member", "cluster.transaction_version": 1},
        {"consumer_group.client": "java-member", "cluster.transaction_version": 2}]


def test_a_setting_is_set_by_its_dotted_path_without_touching_the_base():
    base = {"consumer_group": {"members": 3}}
    out = rates.with_setting(base, "cluster.transaction_version", 1)
    assert out == {"consumer_group": {"members": 3}, "cluster": {"transaction_version": 1}}
    assert base == {"consumer_group": {"members": 3}}
    with pytest.raises(ScenarioError, match="members is not a block"):
        rates.with_setting(base, "consumer_group.members.count", 2)


def test_a_setting_whose_name_has_dots_goes_in_brackets_and_reads_as_the_file_says_it():
    key = "cluster.broker_config[transaction.partition.verification.enable]"
    varied = rates.parse_vary([f"{key}=true,false"])
    assert varied == [(key, [True, False])]
    out = rates.with_setting({"cluster": {"broker_config": {"a.b": 1}}}, key, False)
    assert out == {"cluster": {"broker_config": {"a.b": 1, "transaction.partition.verification.enable": False}}}
    assert rates.label({key: False, "cluster.transaction_version": None}) == f"{key}=false, cluster.transaction_version=null"
    with pytest.raises(ScenarioError, match=r"--vary: cluster\[\] is not PATH\[NAME\]"):
        rates.key_path("cluster[]")


@pytest.mark.parametrize("argv, words", [
    (["--vary", "cluster.transaction_version"], "--vary: 'cluster.transaction_version' is not KEY=VALUE"),
    (["--vary", "a=1", "--vary", "a=2"], "--vary: a given twice"),
    (["--vary", "cluster.transaction_version=1,3"], "with cluster.transaction_version=3: cluster.transaction_version"),
    (["--vary", "consumer_group.client=librdkafka,java"], "with consumer_group.client=java: consumer_group.commit"),
    (["--vary", "cluster.transaction_version=1", "--anomalies", "eos_dup"], "--anomalies: 'eos_dup' is not an anomaly"),
    (["--vary", "cluster.transaction_version=1", "--repeat", "0"], "--repeat: at least 1"),
    ([], "--vary: at least one setting"),
])
def test_bad_input_is_one_error_naming_the_flag_or_field_before_any_run(argv, words, tmp_path, capsys):
    code = main(["rates", str(SCENARIO), "--out", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs"), *argv])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, (code, err)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


def summary(counts=None, valid=True, hits=3) -> dict:
    return {"anomaly_counts": {"eos_duplicate": 0, "eos_lost": 0, **(counts or {})}, "valid": valid,
            "faults": [{"id": "f1", "kind": "rpc", "target": "member-2", "hits": hits}]}


def planted_cells() -> list[rates.Cell]:
    v1 = rates.Cell({"consumer_group.client": "librdkafka", "cluster.transaction_version": 1}, started=5)
    for s in (summary({"eos_duplicate": 4}), summary({"eos_duplicate": 1, "torn_transaction": 1}), summary(),
              summary(hits=0)):
        v1.add(Path("/r"), s)
    v1.add(None, failure="harness: the cluster did not start")
    v2 = rates.Cell({"consumer_group.client": "librdkafka", "cluster.transaction_version": 2}, started=2)
    v2.add(Path("/r"), summary())
    v2.add(Path("/r"), summary(valid=False))
    return [v1, v2]


def test_a_check_that_counts_its_anomalies_by_cause_gives_a_column_each():
    summary = {"anomaly_counts": {"stall": 3, "lost": 0},
               "checks": {"stall": {"ran": True, "by_cause": {"delivery": 2, "hanging_transaction": 1, "x": 0}},
                          "lost": {"ran": True}}}
    cell = rates.Cell({})
    cell.started = 1
    cell.add(Path("r1"), summary)
    assert cell.runs[0]["anomaly_counts"] == {"stall": 3, "stall:delivery": 2, "stall:hanging_transaction": 1}
    assert cell.rate("stall:hanging_transaction")["runs"] == 1
    registry = {"stall": None}
    assert rates.known_column("stall:hanging_transaction", registry) and rates.known_column("stall", registry)
    assert not rates.known_column("stall:", registry) and not rates.known_column("stal:delivery", registry)


def test_a_rate_counts_runs_with_the_anomaly_of_the_runs_analysed():
    v1, v2 = planted_cells()
    dup = v1.rate("eos_duplicate")
    assert (dup["runs"], dup["of"], dup["anomalies"]) == (2, 4, 5)
    assert dup["interval"][0] == pytest.approx(0.150, abs=1e-3) and dup["interval"][1] == pytest.approx(0.850, abs=1e-3)
    assert v1.faults_missed == 1 and v1.analysed == 4 and len(v1.failures) == 1
    assert v2.rate("eos_duplicate")["runs"] == 0 and v2.invalid == 1
    assert rates.columns([v1, v2], None) == ["eos_duplicate", "torn_transaction"]
    assert rates.columns([v1, v2], ["eos_lost"]) == ["eos_lost"]
    assert v1.rate("any", ["eos_lost", "torn_transaction"])["runs"] == 1  # the second run's torn transaction
    assert v1.rate("any", ["eos_duplicate", "torn_transaction"])["runs"] == 2


def test_a_page_is_filled_from_the_table_and_its_slots(tmp_path):
    about = {"date": "2026-11-30", "machine": "2 cores, 24 GB", "kafka_version": "4.3.1"}
    out = tmp_path / "out"
    rates.write(out, "eos-endtxn-delay", planted_cells(), ["eos_duplicate", "eos_lost"], about)
    assert "| librdkafka | 1 | 2 of 4 (15%–85%) | 0 of 4 (0%–49%) | 2 of 4 (15%–85%) | 1 | 0 | 1 of 5 |" in (
        out / "rates.md").read_text()
    page = tmp_path / "kafka-17754.md"
    page.write_text("Under version 1, <!-- rate: cluster.transaction_version=1 eos_duplicate -->?<!-- /rate --> runs; "
                    "in all, <!-- rate: * eos_duplicate -->?<!-- /rate -->; any: <!-- rate: * any -->?<!-- /rate -->."
                    "\n<!-- rates: x -->\nold\n<!-- /rates -->\n")
    rates.publish(out, page)
    text = page.read_text()
    assert "-->2 of 4<!-- /rate --> runs; in all, <!-- rate: * eos_duplicate -->2 of 6<!--" in text
    assert "any: <!-- rate: * any -->2 of 6<!--" in text
    assert "old" not in text and "| librdkafka | 2 | 0 of 2" in text
    published = json.loads((tmp_path / "kafka-17754" / "rates.json").read_text())
    assert published["anomalies"] == ["eos_duplicate", "eos_lost"] and published["cells"][0]["runs"][0]["run_dir"] == "r"
    again = [c.to_json(["eos_duplicate"]) for c in rates.read(out).cells]  # every figure counted again from the runs
    assert again == [c.to_json(["eos_duplicate"]) for c in planted_cells()]


@pytest.mark.parametrize("slot, words", [
    ("consumer_group.client=librdkafka eos_duplicate", "selects 2 combinations"),
    ("cluster.transaction_version=1 stall", "'stall' is not a column"),
    ("eos_duplicate", "not SETTING=VALUE"),
])
def test_a_slot_that_selects_not_one_combination_is_refused_and_nothing_written(slot, words, tmp_path):
    about = {"date": "2026-11-30", "machine": "m", "kafka_version": "4.3.1"}
    rates.write(tmp_path / "out", "s", planted_cells(), ["eos_duplicate"], about)
    page = tmp_path / "p.md"
    page.write_text(f"<!-- rate: {slot} -->?<!-- /rate -->\n<!-- rates: x -->\n<!-- /rates -->\n")
    with pytest.raises(ScenarioError, match=words):
        rates.publish(tmp_path / "out", page)
    assert "?" in page.read_text() and not (tmp_path / "p").exists()


@pytest.mark.parametrize("name", ["kafka-17754", "hanging-transaction"])
def test_a_published_rates_page_says_what_its_record_says(tmp_path, name):
    """docs/<name>.md published again from its own record (docs/<name>/rates.json) is the page as kept: no figure of
    its prose or table was written by hand or left behind by a newer record."""
    import shutil
    page = tmp_path / f"{name}.md"
    shutil.copyfile(ROOT / "docs" / f"{name}.md", page)
    rates.publish(ROOT / "docs" / name, page)
    assert page.read_text() == (ROOT / "docs" / f"{name}.md").read_text()
    assert (tmp_path / name / "rates.json").read_text() == (ROOT / "docs" / name / "rates.json").read_text()


def test_a_fault_that_counts_no_hits_is_never_missed_and_a_rule_that_hit_nothing_is():
    summary = {"anomaly_counts": {}, "faults": [{"id": "leave", "kind": "member_leave", "hits": None},
                                                {"id": "rule", "kind": "rpc", "hits": 0}]}
    cell = rates.Cell({})
    cell.add(Path("r1"), summary)
    again = rates.Cell({})
    again.add(Path("r1"), {"anomaly_counts": {}, "faults": cell.runs[0]["faults"]})  # as a record is read back
    assert cell.runs[0]["faults_missed"] == again.runs[0]["faults_missed"] == ["rule"]
    assert cell.faults_missed == again.faults_missed == 1
