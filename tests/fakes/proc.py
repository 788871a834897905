"""Fake ``/proc`` trees for the PID namespace and process checks (``self/ns/pid``,
``self/status``, ``self/mountinfo``, ``PID/stat``), and a real child in a new PID namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

OTHER_NS_INODE = 4026532178  # a child PID namespace's inode, as `unshare --pid` gave one


def stat_line(pid: int, comm: str = "python", ppid: int = 1, flags: int = 0x400000) -> str:
    """A /proc/PID/stat line (a user process's flags by default: PF_RANDOMIZE)."""
    return f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 {flags} 56105 1157399 0 408 121 393\n"


def fake_proc(
    root: Path,
    *,
    ns_inode: int | None = None,
    nspid: str | None = None,
    pid2: str | None = None,
    mountinfo: str | None = None,
) -> str:
    """A /proc with what the namespace checks read: self/ns/pid (a link to ``pid:[INODE]``),
    self/status with an NSpid line, 2/stat, and self/mountinfo (its mount options)."""
    (root / "self" / "ns").mkdir(parents=True)
    if mountinfo is not None:
        (root / "self" / "mountinfo").write_text(mountinfo)
    if ns_inode is not None:
        (root / "self" / "ns" / "pid").symlink_to(f"pid:[{ns_inode}]")
    status = "Name:\tpython\n" + (f"NSpid:\t{nspid}\n" if nspid is not None else "") + "Uid:\t0\n"
    (root / "self" / "status").write_text(status)
    if pid2 is not None:
        (root / "2").mkdir()
        (root / "2" / "stat").write_text(pid2)
    return str(root)


# /proc/self/mountinfo lines as the kernel writes them (Documentation/filesystems/proc.rst,
# "/proc/<pid>/mountinfo"): ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE
# SUPER-OPTIONS. A plain /proc as a host shows it; since Linux 5.8 hidepid is a per-mount option
# written by name (hidepid=invisible), before by number (hidepid=2).
ROOT_FS = "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
PLAIN_PROC = "22 26 0:21 / /proc rw,relatime shared:12 - proc proc rw\n"


def hidepid_proc(option: str) -> str:
    return f"22 26 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,{option}\n"


def in_new_pid_namespace(script: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """Run ``script`` (with ``args``) as PID 1 of a new PID namespace with its own /proc (as
    root, else in a new user namespace); None where the kernel or a sandbox does not allow it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for extra in ([], ["--user", "--map-root-user"]):
        cmd = [unshare, *extra, "--pid", "--fork", "--mount-proc", sys.executable, "-c", script]
        cmd += args
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return done
    return None
