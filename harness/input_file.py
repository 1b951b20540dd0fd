"""An input file of the harness (a scenario, a sweep file, a schedule, a plan): read within bounds as UTF-8 text or
YAML, and validated by one of our pydantic models, each problem one line naming the file and the field.
"""
from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from faults.kinds import fault_kinds
from harness.bad_input import ScenarioError

MAX_ERRORS_SHOWN = 5
MAX_FILE_BYTES = 16 << 20  # a scenario or a schedule file
FAULT_KINDS = fault_kinds()


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's safe loader: 100 times faster
    """The safe loader, refusing a key given twice in one mapping (YAML would keep the last one silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the safe constructor refuses it, saying where
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_text(path: Path, what: str) -> str:
    """A file's UTF-8 text; ScenarioError (one line, naming the file) when it cannot be read or is not text."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)  # /dev/zero is a file too
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: the {what} is larger than {MAX_FILE_BYTES >> 20} MB; is it the right file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start})") from None


def read_yaml(path: Path, what: str) -> object:
    """A YAML file's content; ScenarioError (one line, naming the file and where the YAML breaks) when it is not."""
    text = read_text(path, what)
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{path}: the {what} is not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: the {what} nests too deeply") from None
    if data is None:
        raise ScenarioError(f"{path}: the {what} is empty")
    return data


def field_path(item) -> str:
    """Where a pydantic error is, as a scenario path (`faults[0].target`), without the union's tag."""
    loc = item["loc"]
    loc = [p for i, p in enumerate(loc) if not (p in FAULT_KINDS and (i == 0 or isinstance(loc[i - 1], int)))]
    if item["type"] in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("kind")
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def error_message(item) -> str:
    kinds = ", ".join(FAULT_KINDS)
    if item["type"] == "union_tag_invalid":
        return f"unknown fault kind {item['input'].get('kind')!r}; kinds: {kinds}"
    if item["type"] == "union_tag_not_found":
        return f"required; kinds: {kinds}"
    if item["type"] == "extra_forbidden":
        return "unknown field"
    return item["msg"].removeprefix("Value error, ")


UNION_BRANCHES = {"int": int, "list[MemberSpec]": list}  # consumer_group.members: a count or member specs


def _other_branch(item) -> bool:
    """An error from the branch of `int | list[...]` the input was not meant for (pydantic reports both)."""
    loc = item["loc"]
    if not loc or loc[-1] not in UNION_BRANCHES:
        return False
    return isinstance(item["input"], list) != (UNION_BRANCHES[loc[-1]] is list)


def located(item, where: str = "") -> str:
    """`path: message` for one pydantic error; a model-level check that names its own field is attached to the path."""
    loc = [p for p in item["loc"] if p not in UNION_BRANCHES]
    path = where + field_path({**item, "loc": tuple(loc)})
    path, message = path.lstrip(".") or "scenario", error_message(item)
    named = re.match(r"^([\w\[\].]+): (.*)$", message)
    if named:
        path = named.group(1) if path == "scenario" else f"{path}.{named.group(1)}"
        message = named.group(2)
    return f"{path}: {message}"


def described(error: ValidationError, source: str, data: dict) -> str:
    """One line: the file, then each wrong field with what is wrong with it."""
    lines = [located(item) for item in error.errors() if not _other_branch(item)]
    if "topic" in data and "topics" not in data:  # name the field the way the file wrote it
        lines = [re.sub(r"^topics\[0\]([.:])", r"topic\1", line) for line in lines]
    more = f"; and {len(lines) - MAX_ERRORS_SHOWN} more" if len(lines) > MAX_ERRORS_SHOWN else ""
    return f"{source}: " + "; ".join(lines[:MAX_ERRORS_SHOWN]) + more


def validated(model, data: object, source: str, shape: str):
    """`data` as `model` (one of our pydantic models), or one ScenarioError naming the source and the first field:
    `shape` says what the file must be ("a plan is a JSON object")."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: {shape}, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        item = exc.errors()[0]
        raise ScenarioError(f"{source}: {located(item) if item['loc'] else item['msg']}") from None


