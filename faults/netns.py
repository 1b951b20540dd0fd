"""Firewall rules inside one container's network namespace (`nsenter -t PID -n iptables`, run on the
host), in a chain of our own (KAFKA_CHAOS, hooked into OUTPUT) so that a reset can flush everything we
ever added without touching anything else.

Brokers reach each other only through Toxiproxy, on a port per destination broker and lane; dropping
packets to one destination address and port in the sender's namespace cuts that one direction for that
one pair, which Toxiproxy alone (one proxy per destination, shared by every sender) cannot do.
Dropped, not rejected: like a real partition, established connections stall until TCP gives up.
A container that is stopped or restarted gets a new namespace, so its rules are gone with the old one.
"""
from __future__ import annotations

import subprocess

CHAIN = "KAFKA_CHAOS"


class FirewallError(RuntimeError):
    pass


def _pid(container) -> int | None:
    """The container's init pid on the host, or None if it has no namespace (not running).
    A paused container still has one, and its rules still count."""
    container.reload()
    return container.attrs["State"]["Pid"] or None


def _run_iptables(pid: int, *args: str) -> subprocess.CompletedProcess:
    """iptables inside the namespace of the process `pid` (waiting up to 5 s for the xtables lock)."""
    return subprocess.run(["nsenter", "-t", str(pid), "-n", "iptables", "-w", "5", *args],
                          capture_output=True, text=True, timeout=30)


def _iptables(pid: int, *args: str, check: bool = True) -> bool:
    result = _run_iptables(pid, *args)
    if check and result.returncode != 0:
        raise FirewallError(f"{' '.join(result.args)}: {result.stderr.strip()}")
    return result.returncode == 0


def _ensure_chain(pid: int) -> None:
    if not _iptables(pid, "-n", "-L", CHAIN, check=False):
        _iptables(pid, "-N", CHAIN)
    if not _iptables(pid, "-C", "OUTPUT", "-j", CHAIN, check=False):
        _iptables(pid, "-I", "OUTPUT", "-j", CHAIN)


def _rule(address: str, port: int, tag: str) -> list[str]:
    return ["-d", address, "-p", "tcp", "--dport", str(port), "-m", "comment", "--comment", tag, "-j", "DROP"]


def drop(container, address: str, ports: list[int], tag: str) -> bool:
    """Drop every outgoing TCP packet to address:port for these ports (idempotent). False if the
    container is down (a crashed broker): it has no namespace, and sends nothing until it restarts,
    when it gets a fresh namespace without these rules."""
    pid = _pid(container)
    if pid is None:
        return False
    _ensure_chain(pid)
    for port in ports:
        if not _iptables(pid, "-C", CHAIN, *_rule(address, port, tag), check=False):
            _iptables(pid, "-A", CHAIN, *_rule(address, port, tag))
    return True


def undrop(container, address: str, ports: list[int], tag: str) -> None:
    """Remove exactly the rules `drop` added with this tag (idempotent; fine after a half-done drop)."""
    pid = _pid(container)
    if pid is None:
        return
    for port in ports:
        while _iptables(pid, "-C", CHAIN, *_rule(address, port, tag), check=False):
            _iptables(pid, "-D", CHAIN, *_rule(address, port, tag))


def rules(container) -> list[str]:
    """Our chain's rules in this container, as `iptables -S` prints them (empty if none)."""
    pid = _pid(container)
    if pid is None:
        return []
    return [line for line in _run_iptables(pid, "-S", CHAIN).stdout.splitlines() if line.startswith("-A ")]


def flush(container) -> None:
    """Remove every rule of ours in this container (the reset between runs)."""
    pid = _pid(container)
    if pid is not None:
        _iptables(pid, "-F", CHAIN, check=False)
