"""Performance probe: a child-process worker that measures bandwidth and matmul throughput.

``python -m gputui.probe --device cuda:0`` streams JSON lines (see ``protocol``). Only the child
side (``worker`` and its ``kernels``) touches torch; ``protocol``, ``runner``, ``report`` and
``verdict`` are safe to import anywhere.
"""
