"""The scenario file: its schema (schema.py), its rules across fields (rules.py) and loading it (loading.py).

What the rest of the project uses is named here.
"""
from harness.bad_input import ScenarioError
from harness.input_file import Strict, located, read_text, read_yaml, validated
from harness.scenario.loading import catalog, load_scenario, parse_with_unique_names, unique_names, with_workdir
from harness.scenario.schema import (ADMIN_PROBE, CHANGELOG_CONFIGS, FAULT_ENTRY, FAULT_KINDS, PRODUCER, AdminProbeSpec, AnalysisSpec,
                                     ClusterSpec, ConsumerGroupSpec, FaultEntry, MemberSpec, ProcessingSpec,
                                     ProducerSpec, RandomFaultsSpec, RunSpec, Scenario, StateSpec, TopicSpec,
                                     parse_scenario)

__all__ = ["ADMIN_PROBE", "CHANGELOG_CONFIGS", "FAULT_ENTRY", "FAULT_KINDS", "PRODUCER", "AdminProbeSpec", "AnalysisSpec", "ClusterSpec",
           "ConsumerGroupSpec", "FaultEntry", "MemberSpec", "ProcessingSpec", "ProducerSpec", "RandomFaultsSpec",
           "RunSpec", "Scenario", "ScenarioError", "StateSpec", "Strict", "TopicSpec", "catalog", "load_scenario", "located",
           "parse_scenario", "parse_with_unique_names", "read_text", "read_yaml", "unique_names", "validated",
           "with_workdir"]
