"""``python -m gputui.probe``: the probe worker (JSON lines on stdout)."""

import sys

from gputui.probe.worker import main

if __name__ == "__main__":
    sys.exit(main())
