"""Kernel log lines as the NVIDIA driver and Linux print them, each with its evidence, for the
XID parser. ``stamped(secs, text)`` puts a line in ``dmesg`` form
(``[   secs] text``), as :func:`gputui.xid.read_kernel_log` returns it."""

from __future__ import annotations

# -- XIDs on a MIG GPU ---------------------------------------------------------------------------
# krcReportXid in open-gpu-kernel-modules, src/nvidia/src/kernel/gpu/rc/kernel_rc.c, prints
#   "NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u): %d, pid=%s, name=%s, %s\n"
# when the driver can attribute the XID to a GPU instance and a compute instance, and
#   "NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u): %d, pid=%s, name=%s, %s\n"
# when only to a GPU instance. Written here from the first format string:
MIG_XID_GI_CI = (
    "NVRM: Xid (PCI:0000:17:00 GPU-I:05 GPU-CI:02): 94, pid=1234, name=python, "
    "Contained: CE User Channel (0x9). RST: No, D-RST: No"
)
# Verbatim from NVIDIA's "GPU Memory Error Management" guide, User Visible Statistics, table
# "Uncorrectable ECC Errors XID Log Examples", row "Contained error with MIG enabled" (the PCI
# address changed from 0000:01:00 to the simulated A100's):
MIG_XID_GI = (
    "NVRM: Xid (PCI:0000:17:00 GPU-I:05): 94, pid=7194, "
    "Contained: CE User Channel (0x9). RST: No, D-RST: No"
)


def stamped(secs: float, text: str) -> str:
    """``[  123.456789] text``: a line as ``dmesg`` and /dev/kmsg (via read_kernel_log) give it."""
    return f"[{secs:12.6f}] {text}"
