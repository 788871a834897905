"""``gputui export``: serve the readings and health findings as Prometheus metrics on
``/metrics``, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import errno
import signal
import threading

from prometheus_client import CollectorRegistry

from gputui.commands.output import error
from gputui.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.export.collector import GpuCollector
from gputui.export.dcgm import DEFAULT_TOP_PROCESSES
from gputui.export.server import Listen, MetricsServer, is_loopback
from gputui.session import BackendSpec, SessionError, open_session
from gputui.settings.model import Settings


def run(
    spec: BackendSpec | str,
    *,
    seed: int,
    listen: Listen,
    interval: float,
    top_processes: int = DEFAULT_TOP_PROCESSES,
    stop: threading.Event | None = None,
    settings: Settings | None = None,
) -> int:
    """Serve ``/metrics`` until Ctrl-C / SIGTERM (exit 0) or ``stop`` is set. 2: the address is
    unusable (in use, not permitted) or no usable GPU. ``settings``: the price of a GPU-hour and
    the health thresholds."""
    if isinstance(spec, str):
        spec = BackendSpec.parse(spec)
    where = listen.url.removesuffix("/metrics")
    registry = CollectorRegistry(auto_describe=False)
    try:
        server = MetricsServer(registry, listen.host, listen.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        hint = (
            " (another exporter running? pick a port with --listen)"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        error(f"gputui: cannot listen on {where}: {reason}{hint}")
        return EXIT_USAGE
    if not is_loopback(listen.host):
        error(
            f"gputui: warning: listening on {where} makes the metrics (process names, users, "
            "PIDs) visible to the network; firewall it or bind 127.0.0.1"
        )
    try:
        session = open_session(spec, seed=seed, interval=interval, settings=settings)
    except SessionError as exc:
        server.stop()
        error(str(exc))
        return EXIT_NO_GPU
    stop = stop if stop is not None else threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sampler = session.sampler
    try:
        registry.register(GpuCollector(sampler, top_processes=top_processes))
        sampler.poll()  # the first scrape shows a reading
        sampler.start(lambda _snapshot: None)
        server.start()
        actual = listen._replace(port=server.port)
        print(f"serving {actual.url} (Ctrl-C to stop)", flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        server.stop()
        session.close()
    return EXIT_OK


__all__ = ["run"]
