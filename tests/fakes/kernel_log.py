"""Kernel log lines as the NVIDIA driver and Linux print them, each with its evidence, for the
XID parser and the check's aging of XIDs. ``stamped(secs, text)`` puts a line in ``dmesg`` form
(``[   secs] text``), as :func:`gputui.core.xid.read_kernel_log` returns it."""

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

# -- the NVIDIA driver loading -------------------------------------------------------------------
# kernel-open/nvidia/nv.c, module init: nv_printf(NV_DBG_ERRORS, "NVRM: loading %s", pNVRM_ID).
# Open kernel module, verbatim from NVIDIA/open-gpu-kernel-modules issue #421 (525.60.11):
DRIVER_LOAD_OPEN = (
    "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  525.60.11  Release Build  "
    "(dvs-builder@U16-T01-9-2)  Wed Nov 23 23:04:11 UTC 2022"
)
# Proprietary module, verbatim from Bumblebee-Project/Bumblebee issue #645 (340.65):
DRIVER_LOAD_PROPRIETARY = (
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  340.65  Tue Dec  2 09:50:34 PST 2014"
)

# -- a GPU found on the PCI bus (again) ----------------------------------------------------------
# Linux drivers/pci/probe.c, pci_setup_device(), for every device added to the bus (at boot and
# on a rescan after `echo 1 > /sys/bus/pci/devices/.../remove`):
#   pci_info(dev, "[%04x:%04x] type %02x class %#08x %s\n", vendor, device, hdr_type, class,
#            pci_type_str(dev))           (older kernels print it without the last %s)
# Older form, verbatim from cloud-hypervisor/cloud-hypervisor issue #2000 (a Tesla M40), with
# the simulated A100's address:
PCI_ADDED_GPU_OLD = "pci 0000:17:00.0: [10de:17fd] type 00 class 0x030200"
# Newer form, written from the format string for an A100 80GB PCIe (10de:20b5) at that address:
PCI_ADDED_GPU_NEW = "pci 0000:17:00.0: [10de:20b5] type 00 class 0x030200 PCIe Endpoint"
# A board's HD-audio function (class 0x0403, function 1 at the GPU's address; consumer boards
# have one) is no GPU: not a re-enumerated GPU on its own.
PCI_ADDED_AUDIO = "pci 0000:17:00.1: [10de:22ba] type 00 class 0x040300 PCIe Endpoint"

# -- a GPU reset in place ------------------------------------------------------------------------
# `nvidia-smi -r` leaves no line at the driver's default log level: its FLR messages are
# NV_DBG_INFO (kernel-open/nvidia/os-pci.c, os_pci_trigger_flr: "NVRM: %s() Start to trigger
# FLR"), and NVIDIA's NVSentinel writes its own "GPU reset executed: <UUID>" line with `logger`
# after a reset because the kernel log has none (NVIDIA/NVSentinel PR #1475). So there is no
# line to teach here; only the check's XID window ages the XIDs before such a reset.


def stamped(secs: float, text: str) -> str:
    """``[  123.456789] text``: a line as ``dmesg`` and /dev/kmsg (via read_kernel_log) give it."""
    return f"[{secs:12.6f}] {text}"
