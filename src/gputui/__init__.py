"""gputui: a live terminal dashboard for NVIDIA and AMD GPUs."""

__version__ = "0.1.0"
