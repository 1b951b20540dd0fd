"""Scenario files on disk: one loaded and checked, a folder's catalog, and the unique names that let runs share a
cluster.
"""
from __future__ import annotations

from pathlib import Path

from harness.input_file import read_yaml
from harness.scenario.rules import DEFAULT_GROUP_ID, derived_output_topics
from harness.scenario.schema import Scenario, parse_scenario


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    return parse_scenario(with_workdir(read_yaml(path, "scenario"), path.parent), str(path))


def with_workdir(data: object, folder: Path) -> object:
    """A scenario whose command members start in `folder` (the scenario file's, or a test file's), or in its
    consumer_group.workdir taken relative to it: the folder made absolute, so the plan runs it from anywhere."""
    group = data.get("consumer_group") if isinstance(data, dict) else None
    if not isinstance(group, dict):
        return data
    entries = group.get("members") if isinstance(group.get("members"), list) else []
    if group.get("command") is None and not any(isinstance(m, dict) and m.get("command") is not None for m in entries):
        return data
    workdir = (Path(folder) / str(group.get("workdir") or ".")).resolve()
    return {**data, "consumer_group": {**group, "workdir": str(workdir)}}


def parse_with_unique_names(data: object, suffix: str, source: str) -> Scenario:
    """The scenario checked as its author wrote it (an error names their own names), then with unique names."""
    parse_scenario(data, source)
    return parse_scenario(unique_names(data, suffix), source)


def unique_names(scenario: dict, suffix: str) -> dict:
    """The scenario with `-suffix` after its group id, its topic names and the topics topic_create makes, so
    runs on one cluster never share them; a consumer_group.pattern then matches the names before the suffix."""
    named = lambda spec, default: {**(spec or {}), "name": f"{(spec or {}).get('name', default)}-{suffix}"}  # noqa: E731
    group = scenario.get("consumer_group", {})
    out = {**scenario, "consumer_group": {**group, "group_id": f"{group.get('group_id', DEFAULT_GROUP_ID)}-{suffix}"}}
    if group.get("pattern"):  # matches this run's topics only, not those of earlier runs on the cluster
        out["consumer_group"]["pattern"] = f"({group['pattern']})-{suffix}"
    suffixed = lambda names: None if names is None else [f"{n}-{suffix}" for n in names]  # noqa: E731
    if group.get("topics") is not None:
        out["consumer_group"]["topics"] = suffixed(group["topics"])
    group_id = group.get("group_id", DEFAULT_GROUP_ID)
    if isinstance(group.get("output"), dict) and group["output"].get("topic") in derived_output_topics(group_id):
        # named after the group: named again after its new id, its other settings kept
        tail = group["output"]["topic"].removeprefix(f"{group_id}-")
        out["consumer_group"]["output"] = {**group["output"], "topic": f"{out['consumer_group']['group_id']}-{tail}"}
    elif isinstance(group.get("output"), dict) and group["output"].get("topic"):
        out["consumer_group"]["output"] = {**group["output"], "topic": f"{group['output']['topic']}-{suffix}"}
    if isinstance(group.get("members"), list):
        out["consumer_group"]["members"] = [{**m, "topics": suffixed(m["topics"])} if m.get("topics") else m
                                            for m in group["members"]]
    if "topics" in scenario:
        out["topics"] = [named(t, "chaos") for t in scenario["topics"]]
    else:
        out["topic"] = named(scenario.get("topic"), "chaos")
    out["faults"] = [{**f, "target": f"{f['target']}-{suffix}"} if f.get("kind") == "topic_create" else f
                     for f in scenario.get("faults", [])]
    return out


def catalog(folder: Path) -> list[tuple[Path, Scenario]]:
    """Every scenario file of a folder (the project's scenarios/), by file name; each one valid."""
    return [(path, load_scenario(path)) for path in sorted(Path(folder).glob("*.yaml"))]
