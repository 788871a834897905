"""What fits: the largest model (billions of parameters) whose weights, plus an overhead, fit in
a GPU's memory, for inference at several precisions and for full training with Adam.

memory = parameters x bytes per parameter x (1 + overhead)

A rule of thumb for the dashboard, not a planner: real KV-cache and activation memory depend on
batch size, sequence length and framework.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.frozen import frozen

INFERENCE_OVERHEAD = 0.20
TRAINING_OVERHEAD = 0.20

ASSUMPTIONS = (
    "memory = parameters x bytes per parameter x (1 + overhead); 1 B = 10^9 parameters",
    f"inference: weights at FP16 2, FP8 1, INT8 1, INT4 0.5 bytes per parameter, "
    f"+{INFERENCE_OVERHEAD:.0%} for KV cache and activations (short context, small batch)",
    "training: full fine-tuning with Adam in mixed precision, 16 bytes per parameter "
    "(weights 2 + gradients 2 + FP32 master weights 4 + Adam moments 8), "
    f"+{TRAINING_OVERHEAD:.0%} for activations (small batch or activation checkpointing)",
)
"""Text for the UI, one line per assumption."""

NODE_ASSUMPTION = (
    "node: the sum over its GPUs, which assumes the model is sharded across them "
    "(tensor / pipeline parallel or FSDP / ZeRO-3) with no memory lost to the split"
)


@frozen(slots=False)
class FitRow:
    label: str
    """``FP16 inference``, ..., ``training (Adam)``."""
    bytes_per_param: float
    overhead: float
    total_b: float
    """Largest model, in billions of parameters, that fits in the total memory."""
    free_b: float
    """The same for the memory free now."""

    @property
    def bytes_per_param_with_overhead(self) -> float:
        return self.bytes_per_param * (1 + self.overhead)


FIT_CASES: tuple[tuple[str, float, float], ...] = (
    ("FP16 inference", 2.0, INFERENCE_OVERHEAD),
    ("FP8 inference", 1.0, INFERENCE_OVERHEAD),
    ("INT8 inference", 1.0, INFERENCE_OVERHEAD),
    ("INT4 inference", 0.5, INFERENCE_OVERHEAD),
    ("training (Adam)", 16.0, TRAINING_OVERHEAD),
)


def max_params_b(memory_bytes: float, bytes_per_param: float, overhead: float) -> float:
    """Billions of parameters that fit in ``memory_bytes``."""
    if memory_bytes <= 0:
        return 0.0
    return memory_bytes / (bytes_per_param * (1 + overhead)) / 1e9


def fits(total_bytes: float, free_bytes: float) -> list[FitRow]:
    """One row per case (:data:`FIT_CASES`) for one GPU's total and free memory in bytes."""
    return [
        FitRow(
            label,
            bpp,
            overhead,
            max_params_b(total_bytes, bpp, overhead),
            max_params_b(free_bytes, bpp, overhead),
        )
        for label, bpp, overhead in FIT_CASES
    ]


def node_fits(gpus: Sequence[tuple[float, float]]) -> list[FitRow]:
    """:func:`fits` for the whole node: total and free memory summed over ``(total, free)``
    pairs, which assumes the model is sharded across the GPUs (:data:`NODE_ASSUMPTION`)."""
    total = sum(max(t, 0) for t, _ in gpus)
    free = sum(max(f, 0) for _, f in gpus)
    return fits(total, free)
