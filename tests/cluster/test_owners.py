"""Issue 38, item 4: never a hand on what is not the harness's own. Containers of three harnesses on one Docker
engine: one on another host (live or not, nothing here can tell), one of this host that is gone, one live. A sweep
(what every cluster start does) removes only the gone one's, and says whose it was."""
import subprocess

import docker
import pytest

from harness.cluster.containers import OWNER_LABEL, PROJECT_LABEL, RUN_LABEL, sweep_stale_containers
from harness.releases.versions import pinned
from workloads.owner import this_owner

pytestmark = pytest.mark.cluster


def a_container(client, run: str, owner: str):
    return client.containers.run(pinned("KAFKA_CHAOS_BASE_IMAGE"), ["sleep", "300"], detach=True,
                                 labels={PROJECT_LABEL: "kafka-chaos", RUN_LABEL: run, OWNER_LABEL: owner})


def test_a_sweep_removes_only_what_a_gone_harness_of_this_host_left():
    client = docker.from_env()
    gone = subprocess.Popen(["true"])
    gone.wait()
    me = this_owner().split(":")
    owners = {"foreign": ":".join(["another-host", *me[1:]]), "gone": ":".join([*me[:3], str(gone.pid), me[4]]),
              "live": this_owner()}
    made = {name: a_container(client, f"owners-test-{name}", owner) for name, owner in owners.items()}
    said = []
    try:
        sweep_stale_containers(say=said.append)
        left = {c.labels[RUN_LABEL] for c in client.containers.list(all=True, filters={"label": PROJECT_LABEL})}
        assert "owners-test-gone" not in left
        assert {"owners-test-foreign", "owners-test-live"} <= left, "another host's or a live harness's was removed"
        assert [line for line in said if "owners-test" in line] == \
            [f"removed {made['gone'].name} (run owners-test-gone, owner {owners['gone']}: gone)"]
    finally:
        for container in made.values():
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
