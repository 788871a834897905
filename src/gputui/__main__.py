"""``python -m gputui`` and the ``gputui`` command: the command line, with the garbage collector
paused while it starts (:mod:`gputui.core.gc_pause`)."""

from gputui.core import gc_pause

gc_pause.pause()  # before the imports of the command line, Textual and the backends

from gputui.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
