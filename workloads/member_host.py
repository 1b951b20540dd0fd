"""A member host on librdkafka: many group members in one OS process, each a thread running its own
`workloads.member.Member` (its own Consumer, its own logs), as an application that runs a consumer per
thread does.

The harness asks for a crash or a restart of one member through control/<host>.host.json, and this host answers
in control/<host>.ack.json (the protocol: workloads.config.HostConfig). A crashed member leaves its poll loop
and its Consumer is destroyed without the consumer close (confluent-kafka's dealloc passes
RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE): no commit, and (measured, confluent-kafka 2.16.1, both protocols) no
LeaveGroup and no leave heartbeat. In a run whose lanes cross the request-aware proxy, the harness also keeps the
member's leaves from the brokers and the fault's row lists what it sent (faults/process.py).
"""
from __future__ import annotations

import faulthandler
import resource
import signal
import sys
import threading
import time

from workloads import config as workload_config
from workloads.config import HostConfig, MemberConfig
from workloads.control import ControlFile, host_ack_path, host_control_path, write_atomically
from workloads.history import now_ms
from workloads.member import Member

CONTROL_EVERY_S = 0.1


def raise_open_file_limit() -> int:
    """The soft limit up to the hard one: each consumer holds sockets and wake-up pipes for every broker."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class MemberThread:
    """One member's thread. `crash()` ends it as a killed process would end: no commit, no close, no `stopped`."""

    def __init__(self, cfg: MemberConfig) -> None:
        self.cfg, self.exit_code = cfg, None
        self.destroyed_at_ms: int | None = None  # a crash's real stop: its consumer destroyed
        self.member = Member(cfg)
        self.thread = threading.Thread(target=self._run, name=cfg.member, daemon=True)

    def start(self) -> "MemberThread":
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self.exit_code = self.member.run()
        finally:
            if self.member.crashed:
                self.member.abandon()
                self.destroyed_at_ms = now_ms()

    def stop(self) -> None:
        self.member.stopping = True

    def crash(self) -> None:
        self.member.crashed = True

    def running(self) -> bool:
        return self.thread.is_alive()


class MemberHost:
    def __init__(self, cfg: HostConfig) -> None:
        self.cfg = cfg
        self.stopping = False
        self.control = ControlFile(host_control_path(cfg.run_dir, cfg.host))
        self.configs = {m.member: m for m in cfg.members}
        self.members: dict[str, MemberThread] = {}
        self.down: dict[str, str] = {}  # member -> crashed or stopped, as the harness asked
        self.down_at_ms: dict[str, int] = {}  # a crashed member -> when its consumer was destroyed
        self.acked: dict | None = None

    def run(self) -> int:
        print(f"{self.cfg.host}: {len(self.configs)} members, open-file limit {raise_open_file_limit()}", flush=True)
        self.start_members()
        while not self.stopping and (self.down or any(m.running() for m in self.members.values())):
            wanted = self.control.read() or {}
            self._apply(wanted.get("crashed", []), wanted.get("stopped", []))
            self._ack()
            time.sleep(CONTROL_EVERY_S)
        for member in self.members.values():
            member.stop()
        for member in self.members.values():
            member.thread.join()
        codes = [m.exit_code for m in self.members.values() if m.exit_code not in (None, 0)]
        return max(codes, default=0)

    def start_members(self) -> None:
        """Each member in turn, start_spacing_s apart from start_after_s on (a SIGTERM meanwhile starts no more)."""
        first = time.monotonic() + self.cfg.start_after_s
        for i, name in enumerate(self.configs):
            while not self.stopping and (wait := first + i * self.cfg.start_spacing_s - time.monotonic()) > 0:
                time.sleep(min(wait, CONTROL_EVERY_S))
            if self.stopping:
                return
            self.members[name] = MemberThread(self.configs[name]).start()

    def _apply(self, crashed: list[str], stopped: list[str]) -> None:
        """Crash the members newly on the crashed list, close those newly on the stopped list (a graceful leave),
        start again those taken off either; then say so."""
        down = {name: "crashed" for name in crashed if name in self.configs}
        down |= {name: "stopped" for name in stopped if name in self.configs and name not in down}
        if down == self.down:
            return
        going = [name for name in down if name not in self.down]
        for name in going:
            (self.members[name].crash if down[name] == "crashed" else self.members[name].stop)()
        for name in going:
            self.members[name].thread.join()
            if down[name] == "crashed":
                self.down_at_ms[name] = self.members[name].destroyed_at_ms or now_ms()
        for name in sorted(set(self.down) - set(down)):
            self.members[name] = MemberThread(self.configs[name]).start()
        self.down = down

    def _ack(self) -> None:
        """What is down as asked, when each crashed member's consumer was destroyed, and which members' threads run
        (one that ended on its own error runs no more); written when it changes."""
        crashed = sorted(n for n, how in self.down.items() if how == "crashed")
        state = {"crashed": crashed, "down_at_ms": {n: self.down_at_ms[n] for n in crashed},
                 "stopped": sorted(n for n, how in self.down.items() if how == "stopped"),
                 "running": sorted(n for n, m in self.members.items() if n not in self.down and m.running())}
        if state != self.acked:
            write_atomically(host_ack_path(self.cfg.run_dir, self.cfg.host), state)
            self.acked = state


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the harness's HostControl.dump_stacks
    sys.exit(workload_config.run_workload(MemberHost, HostConfig))
