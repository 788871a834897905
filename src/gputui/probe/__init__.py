"""Performance probe: a child-process worker that measures bandwidth and matmul throughput.

``python -m gputui.probe --device cuda:0`` streams JSON lines (see ``protocol``). Only
``gputui.probe.worker`` imports torch; ``gputui.probe.protocol`` is safe to import anywhere.
"""
