"""``gputui export``: serve the readings and health findings as Prometheus metrics on
``/metrics``, until Ctrl-C or SIGTERM.

Needs the ``export`` extra (``prometheus-client``), imported only when the command runs: without
it the command says how to install it and exits 2. ``--incidents DIR`` also writes the minutes
around each failure that begins as a recording (:mod:`gputui.engine.incidents`)."""

from __future__ import annotations

import argparse
import errno
import signal
import threading
from dataclasses import field

from gputui.commands import incident_files
from gputui.commands.alerting import alerts_sent, refuse_for_replay
from gputui.commands.common import REAL, Common, Seams, UsageError
from gputui.commands.incident_files import IncidentOptions
from gputui.commands.output import error
from gputui.commands.parsers.export import DEFAULT_LISTEN
from gputui.commands.session_open import open_or_report
from gputui.core.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.frozen import frozen
from gputui.core.metric_names import DcgmNames
from gputui.engine.session import BackendSpec
from gputui.settings.model import Settings


@frozen
class ExportOptions:
    spec: BackendSpec
    seed: int = 0
    listen: str = DEFAULT_LISTEN
    """HOST:PORT, [IPv6]:PORT, :PORT or PORT (:func:`gputui.export.server.parse_listen`)."""
    interval: float = 1.0
    dcgm_names: DcgmNames = "legacy"
    """The DCGM metric names published (``--dcgm-names``, ``export.dcgm_names``)."""
    settings: Settings = field(default_factory=Settings)
    """The price of a GPU-hour and the health thresholds."""
    incidents: IncidentOptions | None = None
    """``--incidents DIR``: a recording around each failure that begins."""


PROG = "gputui export"


def options(args: argparse.Namespace, common: Common) -> ExportOptions:
    spec = common.spec()
    refuse_for_replay(common.settings, spec)
    return ExportOptions(
        spec,
        seed=common.seed,
        listen=args.listen,
        interval=common.interval,
        dcgm_names=common.settings.export.dcgm_names,
        settings=common.settings,
        incidents=incident_files.incident_options(args, common.settings),
    )


def run(options: ExportOptions, seams: Seams = REAL) -> int:
    """Serve ``/metrics`` until Ctrl-C / SIGTERM (exit 0) or ``seams.stop`` is set. 2: the
    extra is missing, the address is unusable (in use, not permitted) or no usable GPU;
    :class:`UsageError` when ``options.listen`` is no address."""
    try:
        from prometheus_client import CollectorRegistry

        from gputui.export.collector import GpuCollector
        from gputui.export.server import MetricsServer, is_loopback, parse_listen
    except ModuleNotFoundError as exc:
        if exc.name != "prometheus_client":
            raise
        error("gputui: export needs prometheus-client: pip install 'gputui[export]'")
        return EXIT_USAGE
    try:
        listen = parse_listen(options.listen)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
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
    session = open_or_report(
        options.spec, seed=options.seed, interval=options.interval, settings=options.settings
    )
    if session is None:
        server.stop()
        return EXIT_NO_GPU
    stop = seams.stop if seams.stop is not None else threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sampler = session.sampler
    watching = None
    if options.incidents is not None:
        carry_on = "; exporting without them"
        why = incident_files.unusable(options.incidents)
        if why is None:
            watching = incident_files.watcher(PROG, options.incidents, "; the export carries on")
            sampler.add_listener(watching)
        else:
            incident_files.refused(PROG, options.incidents, why, carry_on)
    with alerts_sent(options.settings, session):
        try:
            registry.register(GpuCollector(sampler, dcgm_names=options.dcgm_names))
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
            if watching is not None:
                incident_files.finish(PROG, watching)
    return EXIT_OK


__all__ = ["DEFAULT_LISTEN", "ExportOptions", "options", "run"]
