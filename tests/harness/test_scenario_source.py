"""run.json's `source` for a scenario file: relative to the repository when the file is inside it, else absolute."""
import os

from harness.run import REPOSITORY, scenario_source


def test_a_file_of_the_repository_is_named_relative_to_it(monkeypatch, tmp_path):
    monkeypatch.chdir(REPOSITORY / "scenarios")
    assert scenario_source("zoo/kafka-7026.yaml") == os.path.join("scenarios", "zoo", "kafka-7026.yaml")
    assert scenario_source(REPOSITORY / "scenarios" / "default.yaml") == os.path.join("scenarios", "default.yaml")


def test_a_file_elsewhere_keeps_its_absolute_path(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert scenario_source("mine.yaml") == str(tmp_path.resolve() / "mine.yaml")
