"""A fake probe worker: a script the runner starts instead of ``python -m gputui.probe``.

It speaks the worker's JSON-lines protocol and behaves as the CUDA runtime does where the runner
depends on it, each behaviour with its evidence beside it. Its environment steers it:
``FAKE_MODE`` (``ok``, ``crash``, ``garbage``, ``notorch``, ``hang``, ``wrong_gpu``),
``FAKE_VALUE_cuda_N`` (the value every result of ``cuda:N`` reports), ``FAKE_SLEEP`` (seconds
per test), ``FAKE_SKIP`` / ``FAKE_RETRY`` (tests skipped / retried once smaller before their
result, comma-separated), ``FAKE_ARGV`` (a file that gets one JSON line per start: argv and the
visibility and TF32 override variables it saw), ``FAKE_PIDFILE`` (``hang``: where it writes its
pid).
"""

from __future__ import annotations

import textwrap

FAKE = textwrap.dedent(
    """
    import json, os, sys, time, signal
    args = sys.argv[1:]
    device = args[args.index("--device") + 1]
    tests = args[args.index("--tests") + 1].split(",")
    mode = os.environ.get("FAKE_MODE", "ok")
    TF32_VARS = ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE")
    def out(**m):
        print(json.dumps(m), flush=True)
    # Like CUDA: cuda:N is the N-th entry of CUDA_VISIBLE_DEVICES; torch prints the UUID
    # without NVML's "GPU-" prefix.
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v]
    index = int(device.split(":")[1]) if device.startswith("cuda:") else 0
    # Like CUDA with MIG: one MIG device is enumerated per process, however many MIG UUIDs are
    # listed (device_count() is 1 and cuda:1 is an invalid device ordinal: pytorch/pytorch#92315,
    # NVIDIA's MIG user guide, "CUDA device enumeration"). The real worker then reports
    # "no such GPU" before its hello.
    migs = [v for v in visible if v.startswith("MIG-")]
    if migs:
        visible = migs[:1]
        if index >= len(visible):
            out(type="error", test=None, message=device + ": no such GPU")
            out(type="done", seconds=0.0)
            sys.exit(1)
    uuid = visible[index].removeprefix("GPU-") if index < len(visible) else None
    if mode == "wrong_gpu" and index == 1:  # cuda:1 opens another GPU
        uuid = "someone-else"
    out(type="hello", worker_version="1", torch_version="fake", device_kind="cuda",
        device_name="fake " + device, device_index=index, total_memory=1, free_memory=1,
        tests=tests, uuid=uuid)
    with open(os.environ.get("FAKE_ARGV", os.devnull), "a") as fh:
        fh.write(json.dumps({"argv": args, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                             "hip": os.environ.get("HIP_VISIBLE_DEVICES"),
                             "tf32_overrides": [os.environ.get(v) for v in TF32_VARS]}) + "\\n")
    if mode == "crash":
        out(type="progress", test=tests[0], fraction=0.5, text="")
        print("Traceback: boom on " + device, file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "garbage":
        print("this is not json", flush=True)
    if mode == "notorch":
        print("ModuleNotFoundError: No module named 'torch'", file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # worst case: ignores SIGTERM
        with open(os.environ["FAKE_PIDFILE"] + device.replace(":", ""), "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(60)
    value = float(os.environ.get("FAKE_VALUE_" + device.replace(":", "_"), "100"))
    skip = os.environ.get("FAKE_SKIP", "").split(",")
    retry = os.environ.get("FAKE_RETRY", "").split(",")
    for t in tests:
        if t in skip:
            out(type="skipped", test=t, reason="not on this fake device")
            continue
        if t in retry:
            out(type="retry", test=t, reason="out of memory", size=1 << 20, attempt=1,
                text="1 MiB")
        out(type="progress", test=t, fraction=1.0, text="")
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
        unit = "TFLOPS" if t.startswith("matmul") else "GB/s"
        if t == "p2p":  # one copy to every other visible GPU, named as the worker names it
            for dst, peer in enumerate(visible):
                if dst != index:
                    out(type="result", test=t, value=value, unit=unit, method="fake",
                        details={"src": index, "dst": dst, "dst_uuid": peer[4:]},
                        iterations=1, seconds=0.01)
            continue
        # Like torch builds that honour TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (pytorch/pytorch#77114;
        # torch 2.11 with the fp32_precision API did not: tests/data/real/h100-sxm5-580.159.04):
        # the "FP32" matmul runs on TF32 tensor cores, 7.4x the FP32 rate on an H100.
        tf32 = os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1"
        speed = 7.4 if tf32 and t == "matmul_fp32" else 1.0
        out(type="result", test=t, value=value * speed, unit=unit, method="fake", details={},
            iterations=1, seconds=0.01)
    out(type="done", seconds=0.1)
    """
)
