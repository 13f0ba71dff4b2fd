"""The filesystem under one broker's log dir: a small tmpfs of its own, so that a test can fill it and
the broker's DescribeLogDirs sizes (KIP-827: `getTotalSpace`/`getUsableSpace` of the log dir's file
store) are those of a filesystem the test controls.

Mounting needs root (`mount -t tmpfs -o size=...`). Where it is refused the volume is a plain
directory on whatever filesystem holds it, and `note` says so with its measured free bytes, so that a
test sets its limits relative to `free_bytes()` rather than to the size it asked for.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

OWNER_FILE = "owner.pid"  # in a cluster's work dir: the process that mounted its volumes


@dataclass
class Volume:
    path: Path  # the mount point (or the plain directory)
    size_bytes: int  # the size asked for
    mounted: bool = False
    note: str = ""  # why it is not a tmpfs of its own, when it is not

    @classmethod
    def create(cls, path: Path, size_bytes: int) -> Volume:
        path.mkdir(parents=True, exist_ok=True)
        volume = cls(path, size_bytes)
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode=0755", "tmpfs",
                                 str(path)], capture_output=True, text=True)
        if result.returncode == 0:
            volume.mounted = True
        else:
            reason = (result.stderr or result.stdout).strip().splitlines()
            volume.note = (f"tmpfs mount refused ({reason[-1] if reason else f'exit {result.returncode}'}):"
                           f" {path} is a plain directory with {volume.free_bytes()} free bytes; limits are"
                           " set relative to that")
        return volume

    def total_bytes(self) -> int:
        s = os.statvfs(self.path)
        return s.f_blocks * s.f_frsize

    def free_bytes(self) -> int:
        """The bytes an unprivileged writer can still use (what Java's `getUsableSpace` reports)."""
        s = os.statvfs(self.path)
        return s.f_bavail * s.f_frsize

    def fill(self, name: str, size_bytes: int) -> Path:
        """A ballast file of `size_bytes` beside the log dir (the broker does not read it)."""
        target = self.path / name
        with target.open("wb") as out:
            chunk = b"\0" * (1 << 20)
            left = size_bytes
            while left > 0:
                left -= out.write(chunk[:min(left, len(chunk))])
        return target

    def release(self) -> None:
        """Unmount (the tmpfs content goes with it); a plain directory is left to its owner."""
        if self.mounted:
            subprocess.run(["umount", str(self.path)], check=False, capture_output=True)
            if os.path.ismount(self.path):  # still busy: detach it now, freed once its last user ends
                subprocess.run(["umount", "--lazy", str(self.path)], check=False, capture_output=True)
            self.mounted = os.path.ismount(self.path)


def release_stale(root: Path, prefix: str) -> list[Path]:
    """Unmount the volumes left mounted under `root/<prefix>*` by a test process that died (its pid,
    recorded in the work dir's owner file, no longer runs)."""
    released: list[Path] = []
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return released
    base = str(root.resolve()) + os.sep + prefix
    for line in mounts:
        fields = line.split()
        if len(fields) < 3 or fields[2] != "tmpfs" or not fields[1].startswith(base):
            continue
        mount_point = Path(fields[1].replace("\\040", " "))
        work = Path(base + fields[1][len(base):].split(os.sep)[0])
        try:
            owner = int((work / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{owner}").exists():
            subprocess.run(["umount", str(mount_point)], check=False, capture_output=True)
            released.append(mount_point)
    return released
