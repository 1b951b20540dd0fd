"""Firewall rules inside one network namespace, in a chain of our own (KAFKA_CHAOS, hooked into OUTPUT) so
that a reset can flush everything we ever added without touching anything else.

Brokers reach each other only through Toxiproxy, on a port per destination broker and lane; dropping
packets to one destination address and port in the sender's namespace cuts that one direction for that
one pair, which Toxiproxy alone (one proxy per destination, shared by every sender) cannot do.
Dropped, not rejected: like a real partition, established connections stall until TCP gives up.

Every function takes `run`: how to run a command inside the namespace (the container backend enters a
container's namespace from the host with `nsenter`, see `nsenter`); it returns None when there is no
namespace, because the broker is down. A broker that is stopped or restarted gets a new namespace, so its
rules are gone with the old one.
"""
from __future__ import annotations

import subprocess
from typing import Callable

CHAIN = "KAFKA_CHAOS"

# A command inside the namespace: its result, or None when there is no namespace (the process is down).
Runner = Callable[[list[str]], "subprocess.CompletedProcess[str] | None"]


class FirewallError(RuntimeError):
    pass


class NoNamespace(Exception):
    """The namespace went away while its rules were being changed (the broker stopped)."""


def nsenter(pid: int, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A command in the network namespace of the host process `pid`."""
    return subprocess.run(["nsenter", "-t", str(pid), "-n", *argv], capture_output=True, text=True, timeout=30)


def _iptables(run: Runner, *args: str, check: bool = True) -> bool:
    """iptables in the namespace (waiting up to 5 s for the xtables lock)."""
    result = run(["iptables", "-w", "5", *args])
    if result is None:
        raise NoNamespace
    if check and result.returncode != 0:
        raise FirewallError(f"{' '.join(result.args)}: {result.stderr.strip()}")
    return result.returncode == 0


def _ensure_chain(run: Runner) -> None:
    if not _iptables(run, "-n", "-L", CHAIN, check=False):
        _iptables(run, "-N", CHAIN)
    if not _iptables(run, "-C", "OUTPUT", "-j", CHAIN, check=False):
        _iptables(run, "-I", "OUTPUT", "-j", CHAIN)


def _rule(address: str, port: int, tag: str) -> list[str]:
    return ["-d", address, "-p", "tcp", "--dport", str(port), "-m", "comment", "--comment", tag, "-j", "DROP"]


def drop(run: Runner, address: str, ports: list[int], tag: str) -> bool:
    """Drop every outgoing TCP packet to address:port for these ports (idempotent). False if there is no
    namespace (a crashed broker): it sends nothing until it restarts, when it gets a fresh namespace
    without these rules."""
    try:
        _ensure_chain(run)
        for port in ports:
            if not _iptables(run, "-C", CHAIN, *_rule(address, port, tag), check=False):
                _iptables(run, "-A", CHAIN, *_rule(address, port, tag))
    except NoNamespace:
        return False
    return True


def undrop(run: Runner, address: str, ports: list[int], tag: str) -> None:
    """Remove exactly the rules `drop` added with this tag (idempotent; fine after a half-done drop)."""
    try:
        for port in ports:
            while _iptables(run, "-C", CHAIN, *_rule(address, port, tag), check=False):
                _iptables(run, "-D", CHAIN, *_rule(address, port, tag))
    except NoNamespace:
        return


def rules(run: Runner) -> list[str]:
    """Our chain's rules in this namespace, as `iptables -S` prints them (empty if none)."""
    result = run(["iptables", "-w", "5", "-S", CHAIN])
    if result is None:
        return []
    return [line for line in result.stdout.splitlines() if line.startswith("-A ")]


def flush(run: Runner) -> None:
    """Remove every rule of ours in this namespace (the reset between runs)."""
    try:
        _iptables(run, "-F", CHAIN, check=False)
    except NoNamespace:
        return
