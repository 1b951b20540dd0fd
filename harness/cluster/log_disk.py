"""A size-limited disk for one broker's log directory (cluster.log_disk_mb): an ext4 image file on the host,
loop-mounted there and bind-mounted into the broker's container, so the disk_full fault can fill it.

Why not tmpfs (`tmpfs=` on the container): its contents are lost when the container stops, and a broker's
restart (broker_crash, broker_restart, the disk_full heal after Kafka halted the broker) must find its data.
The loop mount lives on the host, beside the container, so the data outlives the container's stops, and the
disk can be filled and freed from the host while the broker is down. Each disk sits in its own directory under
DISKS_ROOT with an `owner` file (the owner id, workloads/owner.py, like the containers' owner label), so a harness that was killed leaves
nothing the next one's sweep does not remove.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workloads.owner import owner_gone, this_owner

DISKS_ROOT = Path("/var/tmp/kafka-chaos-disks")
FILL_FILE = "kafka-chaos-disk-full"  # the file disk_full fills the disk with, at the top of the log directory


class LogDiskError(RuntimeError):
    pass


@dataclass(frozen=True)
class LogDisk:
    """One broker's disk: DISKS_ROOT/<run id>-<broker>/ holds the image, the mount point and the owner."""
    path: Path

    @property
    def image(self) -> Path:
        return self.path / "disk.img"

    @property
    def mount(self) -> Path:
        return self.path / "mnt"

    def fill(self) -> int:
        """Allocate every free block of the disk in one file; the bytes it took. A disk filled already stays so."""
        stats = os.statvfs(self.mount)
        free = stats.f_bavail * stats.f_frsize
        fd = os.open(self.mount / FILL_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, os.fstat(fd).st_size + free)
        except OSError as exc:  # the extent tree needs a few blocks of its own: what was allocated stays
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        return (self.mount / FILL_FILE).stat().st_size

    def free(self) -> None:
        (self.mount / FILL_FILE).unlink(missing_ok=True)

    def free_bytes(self) -> int:
        stats = os.statvfs(self.mount)
        return stats.f_bavail * stats.f_frsize


def create(name: str, size_mb: int) -> LogDisk:
    """A fresh ext4 disk of size_mb, mounted and writable by any user (the official image runs as appuser)."""
    disk = LogDisk(DISKS_ROOT / name)
    disk.mount.mkdir(parents=True, exist_ok=True)
    (disk.path / "owner").write_text(this_owner())
    with open(disk.image, "wb") as image:
        image.truncate(size_mb * 1024 * 1024)
    try:
        _run(["mkfs.ext4", "-q", "-F", "-m", "0", str(disk.image)])
        _run(["mount", "-o", "loop", str(disk.image), str(disk.mount)])
    except LogDiskError:
        remove(disk)
        raise
    (disk.mount / "lost+found").rmdir()  # Kafka would take it for a partition's directory
    disk.mount.chmod(0o777)
    return disk


def remove(disk: LogDisk) -> None:
    """Unmount (the loop device goes with it: mount -o loop sets autoclear) and delete. Safe to call twice."""
    if os.path.ismount(disk.mount):
        _run(["umount", "-l", str(disk.mount)])  # lazy: a container being removed may still hold it a moment
    shutil.rmtree(disk.path, ignore_errors=True)


def sweep_stale_disks(include_live: bool = False) -> int:
    """Remove the disks whose owning harness process is gone (or all, if asked), after the containers that used them."""
    removed = 0
    for path in DISKS_ROOT.glob("*") if DISKS_ROOT.is_dir() else []:
        owner = path / "owner"
        if include_live or not owner.exists() or owner_gone(owner.read_text().strip()):
            remove(LogDisk(path))
            removed += 1
    return removed


def _run(argv: list[str]) -> None:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise LogDiskError(f"cluster.log_disk_mb: {argv[0]} is not installed (a log disk needs e2fsprogs and mount)") from None
    if result.returncode != 0:
        raise LogDiskError(f"cluster.log_disk_mb: `{' '.join(argv)}` failed ({result.stderr.strip() or result.returncode}); "
                           "a loop-mounted log disk needs root and a free loop device")
