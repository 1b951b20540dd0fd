"""A command member's command line: a program of the user's, as an argv list or one string for `sh -c`, with the run's
values filled in where it names them ({bootstrap_servers}, {group_id}, {topics}, {member}, {instance_id},
{output_topic}, {python}), and the same values in KAFKA_CHAOS_* environment variables for a program that reads those.

Validation (harness/scenario) checks a command before anything starts; the services start it (workloads/services.py).
"""
from __future__ import annotations

import os
import shlex
import shutil
import string
import sys
from pathlib import Path

PLACEHOLDERS = ("bootstrap_servers", "group_id", "topics", "member", "instance_id", "output_topic", "python")
DEFAULT_START_TIMEOUT_S = 60  # consumer_group.start_timeout_s: a command member logs `started` within it
ENV_PREFIX = "KAFKA_CHAOS_"  # KAFKA_CHAOS_BOOTSTRAP_SERVERS, ... (KAFKA_CHAOS_CLIENT_* are the credentials')


def words(command: list[str] | str) -> list[str]:
    """The command's argv as written: a list as it is, a string split as `sh -c` would split its simple words."""
    return list(command) if isinstance(command, list) else shlex.split(command)


def named_placeholders(command: list[str] | str) -> set[str]:
    """The {names} a command uses (`{{` is a literal brace); ValueError for a malformed one."""
    out = set()
    for word in ([command] if isinstance(command, str) else command):
        try:
            out |= {name for _, name, _, _ in string.Formatter().parse(word) if name is not None}
        except ValueError as exc:
            raise ValueError(f"{word!r}: {exc} (write {{{{ for a literal brace)") from None
    return out


def check_command(command: list[str] | str, workdir: Path) -> None:
    """ValueError (the text after `command: `) for a command that cannot start: an empty one, an unknown
    placeholder, or a program that is not there or not executable (a relative path is the workdir's)."""
    if not words(command):
        raise ValueError("empty: name the program to run")
    unknown = sorted(named_placeholders(command) - set(PLACEHOLDERS))
    if unknown:
        raise ValueError(f"{{{unknown[0]}}} is not a placeholder; placeholders: "
                         + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS))
    program = words(command)[0]
    if "{" in program and program != "{python}":
        return  # named by the run's values: known only when it starts
    program = sys.executable if program == "{python}" else program
    if _executable(program, workdir) is None:
        raise ValueError(f"{program}: not found (cwd {_shown(workdir)})")


def _executable(program: str, workdir: Path) -> str | None:
    if "/" in program:
        path = program if os.path.isabs(program) else str(workdir / program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program)


def _shown(workdir: Path) -> str:
    try:
        return str(workdir.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(workdir)


def values(*, bootstrap_servers: str, group_id: str, topics: list[str], member: str, instance_id: str | None,
           output_topic: str | None) -> dict[str, str]:
    return {"bootstrap_servers": bootstrap_servers, "group_id": group_id, "topics": ",".join(topics),
            "member": member, "instance_id": instance_id or "", "output_topic": output_topic or "",
            "python": sys.executable}


def argv(command: list[str] | str, filled: dict[str, str]) -> list[str]:
    """The argv to start: each word of a list with its placeholders filled in; a string with each value quoted for
    the shell, run by `sh -c`."""
    if isinstance(command, str):
        return ["sh", "-c", command.format(**{k: shlex.quote(v) for k, v in filled.items()})]
    return [word.format(**filled) for word in command]


def environment(filled: dict[str, str]) -> dict[str, str]:
    return {ENV_PREFIX + name.upper(): value for name, value in filled.items()}
