"""The gputui Textual app: wires a running :class:`~gputui.engine.sampler.Sampler` to the screens.

Data flow: the sampler's thread calls ``post_message(SnapshotReady(...))`` (thread-safe, never
blocks, replaceable so a backlog collapses to the newest); :meth:`GpuTuiApp.on_snapshot_ready`
hands the snapshot to the visible screen. The UI thread never calls a backend, except through
:meth:`send_signal`, which runs in a thread worker.

Recording (key R) attaches a :class:`~gputui.tui.recording.RecordingSession` to the sampler as a
listener. Replay mode (the sampler reads a ``ReplayBackend``) swaps the display pause for the
replay's play/pause on space, adds seek and speed keys, and disables signals and recording.
``--readonly`` disables everything that acts on the node or writes a file: signals (k), the probe
(p, it loads the GPUs) and recording (R); each is gone from the palette, and the footer and the
help show it off, with why (``why_disabled``), as a press of the key says (:meth:`run_action`).

Notices (:mod:`gputui.tui.notice`) come one at a time, the newest replacing the one shown; keys
typed right after Esc stay separate keys (:mod:`gputui.tui.typeahead`).

The run's :class:`~gputui.settings.Settings` give the theme (gputui's own are registered beside
Textual's: :mod:`gputui.tui.themes`, which also derives the data colours from the theme), the
keymap (``App.set_keymap``), read-only mode and where recordings go; what could not be used from
the config file shows as a notice too.

SIGTERM and SIGHUP end the app the way q does (:mod:`gputui.tui.exit_signals`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.widgets import Input

from gputui.core import gc_pause
from gputui.core.format import fmt_interval
from gputui.core.model import ProcessSample, Snapshot
from gputui.core.playback import clamp_speed
from gputui.engine.sampler import INTERVAL_PRESETS, Sampler
from gputui.health.rollup import NewFindings
from gputui.host.environ import environ_reader
from gputui.host.signals import ProcessRef
from gputui.settings.model import Settings
from gputui.tui import repaint_compositor, typeahead
from gputui.tui.commands import GpuCommands
from gputui.tui.exit_signals import catch_exit_signals, restore_signals, start_exit_deadline
from gputui.tui.messages import (
    AcknowledgeFindings,
    AlertProblem,
    RecordingFailed,
    SamplerFailed,
    SignalRequested,
    SignalSent,
    SnapshotReady,
)
from gputui.tui.notice import (
    READ_ONLY,
    REPLAY,
    findings_notice,
    keep_only,
    notice_timeout,
    signal_notice,
    unavailable_notice,
)
from gputui.tui.recording import RecordingRefused, RecordingSession, start_session
from gputui.tui.replay import ReplayStatus
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.themes import THEMES, data_colours

if TYPE_CHECKING:
    from gputui.tui.screens.probe import ProbeScreen, ProbeSession

LIGHT_THEME = "textual-light"
DARK_THEME = "textual-dark"
REPLAY_SEEK_ACTIONS = frozenset({"replay_seek", "replay_start", "replay_end"})
"""Bound to cursor keys (with priority, over the process table's): only on the dashboard, and
never while typing in the filter."""
READONLY_DISABLED = frozenset({"toggle_record", "probe"})
"""App actions ``--readonly`` disables (the footer shows them off, with why; the key says why);
the dashboard disables its signal action."""


class GpuTuiApp(App[None]):
    """Live dashboard of the GPUs a :class:`Sampler` reads."""

    # Absolute, so subclasses defined elsewhere (tests, scripts) still find it.
    CSS_PATH = str(Path(__file__).with_name("gputui.tcss"))
    TITLE = "gputui"
    COMMANDS = App.COMMANDS | {GpuCommands}
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
        # As in htop and nvtop; a priority key, so it quits while typing in a filter or a dialog
        # too (Textual's ctrl+q still does as well).
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="quit.interrupt"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("h", "health", "Health", id="health"),
        Binding("t", "topology", "Topology", id="topology"),
        Binding("p", "probe", "Probe", id="probe"),
        Binding("space,Z", "toggle_pause", "Pause", id="pause"),
        Binding("plus,equals_sign", "slower", "Interval +", id="interval.up"),
        Binding("minus", "faster", "Interval −", id="interval.down"),
        Binding("r", "refresh_now", "Refresh", id="refresh"),
        Binding("R", "toggle_record", "Record", id="record"),
        # Replay mode only (see check_action).
        Binding("space", "replay_play", "Play/Pause", id="replay.play"),
        Binding("left", "replay_seek(-10)", "−10s", id="replay.back", priority=True),
        Binding("right", "replay_seek(10)", "+10s", id="replay.forward", priority=True),
        Binding(
            "shift+left,left_square_bracket",
            "replay_seek(-60)",
            "−1m",
            show=False,
            id="replay.back_long",
            priority=True,
        ),
        Binding(
            "shift+right,right_square_bracket",
            "replay_seek(60)",
            "+1m",
            show=False,
            id="replay.forward_long",
            priority=True,
        ),
        Binding("home", "replay_start", "Start", show=False, id="replay.start", priority=True),
        Binding("end", "replay_end", "End", show=False, id="replay.end", priority=True),
        Binding("less_than_sign,comma", "replay_speed(0.5)", "Slower", id="replay.slower"),
        Binding("greater_than_sign,full_stop", "replay_speed(2)", "Faster", id="replay.faster"),
    ]

    def __init__(
        self,
        sampler: Sampler,
        *,
        readonly: bool = False,
        theme: str | None = None,
        start_sampler: bool = True,
        record_dir: Path | str | None = None,
        probe_session: Callable[[ProbeScreen], ProbeSession] | None = None,
        settings: Settings | None = None,
    ) -> None:
        """``record_dir``: where key R writes recordings (default: the settings'); ``theme``: a
        theme name (default: the settings'); ``probe_session``: makes the probe screen's session
        (default: worker children); ``settings``: see the module's docstring."""
        super().__init__()
        settings = settings if settings is not None else Settings()
        self.probe_session = probe_session
        self.sampler = sampler
        self.replay = sampler.playback
        """The replay controls when replaying a recording, else None."""
        # A recording cannot be signalled: replay is always read-only.
        readonly = readonly or settings.readonly or self.replay is not None
        self.readonly = readonly
        self.readonly_reason = REPLAY if self.replay is not None else READ_ONLY
        self.record_dir = Path(record_dir if record_dir is not None else settings.record_dir)
        self.recording: RecordingSession | None = None
        self._replay_ended = False
        self._exit_signal: signal.Signals | None = None
        self.start_sampler = start_sampler
        self.paused = False
        self.latest: Snapshot | None = sampler.latest
        self._last_error = ""
        self.new_findings = NewFindings(("warn", "fail"))
        """Which findings were already notified (see :meth:`notify_findings`)."""
        self._quiet_findings = True
        """The next reading's findings are taken without a notice: the first one, and the first
        after a seek (the title bar and the findings strip show them)."""
        self.notes = [problem.message for problem in settings.problems]
        """What could not be used from the settings: notified once the app runs."""
        self.theme_problem = self._use_theme(theme, settings)
        self._dark_theme = self.theme if self.current_theme.dark else DARK_THEME
        self.set_keymap(settings.keymap_dict)
        # Esc and a key typed right after it are two keys, not Alt+key (gputui.tui.typeahead).
        self.driver_class = typeahead.driver_class(self.driver_class, settings.keymap_dict.values())
        node = sampler.node
        if node is None:  # the CLI opens the sampler first; be forgiving in scripts
            node = sampler.open()
        self.dashboard = DashboardScreen(
            node,
            sampler.history,
            readonly=readonly,
            readonly_reason=self.readonly_reason,
            health_enabled=sampler.health is not None,
            environ_reader=environ_reader(sampler.local_processes),
        )

    def get_default_screen(self) -> Screen[None]:
        return self.dashboard

    def _use_theme(self, theme: str | None, settings: Settings) -> str | None:
        """Register gputui's themes and set ``theme`` (else the settings'); the message when it
        names none."""
        for extra in THEMES:
            self.register_theme(extra)
        name = theme if theme is not None else settings.theme
        if name in self.available_themes:
            self.theme = name
            return None
        where = "" if theme is not None else f" (from {settings.source('theme')})"
        problem = (
            f"gputui: theme {name!r}{where} is not a theme; using {self.theme}. Themes: "
            + ", ".join(sorted(self.available_themes))
        )
        self.notes.append(problem)
        return problem

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """The data colours (``$gputui-*``), derived from the theme unless it sets them."""
        return data_colours(self.current_theme)

    async def run_async(self, *args: Any, **kwargs: Any) -> Any:
        """Run the app (what :meth:`run` calls); SIGTERM and SIGHUP end it like q does, from
        before the terminal is switched to the alternate screen until after it is restored.
        Returns what the app exited with (``App.exit(result)``)."""
        loop = asyncio.get_running_loop()
        caught = catch_exit_signals(loop, self._exit_on_signal)
        try:
            return await super().run_async(*args, **kwargs)
        finally:
            restore_signals(loop, caught)

    def _exit_on_signal(self, sig: signal.Signals) -> None:
        if self._exit_signal is None:
            self._exit_signal = sig
            start_exit_deadline(sig)
        self.exit(return_code=128 + int(sig))

    # -- life cycle --------------------------------------------------------------------------------

    def on_mount(self) -> None:
        # Every screen pushed from now on repaints where a removed widget (an expired
        # notification) was: see gputui.tui.repaint_compositor.
        self.screen_change_signal.subscribe(self, repaint_compositor.install, immediate=True)
        self.call_after_refresh(gc_pause.resume)  # the start is over with the first frame
        if self.notes:
            self.notify("\n".join(self.notes), title="settings", severity="warning")
        self.dashboard.show_interval(self.sampler.interval)
        if self.replay is not None:
            self.show_replay_status()
        if self.latest is not None:
            # After the first refresh, when every widget (the process table too) is mounted.
            self.call_after_refresh(self._show_latest)
        if self.start_sampler:
            # The thread polls at once: the first frame shows "waiting for first reading"
            # and the panels fill in as soon as the first snapshot arrives.
            self.sampler.start(on_snapshot=self._post_snapshot, on_error=self._post_error)

    def _post_snapshot(self, snapshot: Snapshot) -> None:
        self.post_message(SnapshotReady(snapshot))

    def _post_error(self, error: BaseException) -> None:
        self.post_message(SamplerFailed(error))

    def on_unmount(self) -> None:
        if self.start_sampler:
            self.sampler.stop(timeout=1.0)
        if self.recording is not None:
            self.stop_recording(quiet=True)

    # -- snapshots ---------------------------------------------------------------------------------

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.latest = message.snapshot
        if message.snapshot.node is not self.dashboard.node:
            # The wiring, found after the first frame (see Backend.defer_topology).
            self.dashboard.node = message.snapshot.node
        self.notify_findings(message.snapshot)  # even while paused: a finding is never silent
        if self.replay is not None:
            self._check_replay_end()
            self.show_replay_status()
        if self.paused:
            return  # still collected (history), just not drawn
        self._show(message.snapshot)

    def _show(self, snapshot: Snapshot) -> None:
        if not self.screen_stack:  # a reading that arrived while the app was closing
            return
        screen = self.screen
        if screen is self.dashboard:
            self.dashboard.apply(snapshot)
            return
        self.dashboard.apply(snapshot)  # only remembered: it is hidden
        update = getattr(screen, "update_snapshot", None)
        if callable(update):
            update(snapshot)

    def notify_findings(self, snapshot: Snapshot) -> None:
        """One notice for the new warn/fail findings of a reading (see :class:`NewFindings`:
        once while it stays listed; again when it gets worse or comes back after being
        acknowledged); none for the first reading's, which the title bar already counts."""
        new = self.new_findings.take(snapshot.findings)
        quiet, self._quiet_findings = self._quiet_findings, False
        notice = findings_notice(new)
        if notice is not None and not quiet:
            self.notify(notice.message, title=notice.title, severity=notice.severity)

    # -- notices -----------------------------------------------------------------------------------

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A notice (:mod:`gputui.tui.notice`): one at a time, the newest replacing the one
        shown, for a few seconds at most. Plain text unless ``markup``."""
        super().notify(
            message,
            title=title,
            severity=severity,
            timeout=notice_timeout(severity, timeout),
            markup=markup,
        )

    def _on_notify(self, event: Notify) -> None:
        keep_only(self)
        super()._on_notify(event)

    def _show_latest(self) -> None:
        if self.latest is not None and not self.paused:
            self._show(self.latest)

    def report_alert_problem(self, text: str) -> None:
        """Show that an alert could not be sent (callable from any thread)."""
        self.post_message(AlertProblem(text))

    def on_alert_problem(self, message: AlertProblem) -> None:
        text = message.text.removeprefix("gputui: ")
        self.notify(text, title="alerts", severity="warning", timeout=10)

    def on_sampler_failed(self, message: SamplerFailed) -> None:
        text = f"{type(message.error).__name__}: {message.error}"
        if text != self._last_error:  # say it once, not every tick
            self._last_error = text
            self.notify(text, title="reading failed", severity="error", timeout=8)

    # -- actions -----------------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.set_paused(not self.paused)

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.dashboard.show_paused(paused)
        if not paused and self.latest is not None:
            self._show(self.latest)

    def change_interval(self, seconds: float) -> None:
        self.sampler.set_interval(seconds)
        self.sampler.refresh_now()  # re-arm the thread's wait with the new interval
        self.dashboard.show_interval(self.sampler.interval)
        if self.replay is not None:  # the title bar shows the replay's state instead
            self.notify(f"reading every {fmt_interval(self.sampler.interval)}", timeout=2)

    def _step_interval(self, step: int) -> None:
        current = self.sampler.interval
        if step > 0:
            bigger = [p for p in INTERVAL_PRESETS if p > current + 1e-9]
            target = bigger[0] if bigger else INTERVAL_PRESETS[-1]
        else:
            smaller = [p for p in INTERVAL_PRESETS if p < current - 1e-9]
            target = smaller[-1] if smaller else INTERVAL_PRESETS[0]
        self.change_interval(target)

    def action_slower(self) -> None:
        self._step_interval(+1)

    def action_faster(self) -> None:
        self._step_interval(-1)

    def action_refresh_now(self) -> None:
        if self.start_sampler:
            self.sampler.refresh_now()

    def action_help(self) -> None:
        from gputui.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
            return
        self.push_screen(HelpScreen(self.dashboard))

    def action_health(self) -> None:
        """Open the findings screen (or close it when it is on top)."""
        from gputui.tui.screens.findings import FindingsScreen

        if isinstance(self.screen, FindingsScreen):
            self.screen.dismiss(None)
            return
        screen = FindingsScreen(judged=self.sampler.health is not None)
        if self.latest is not None:
            screen.update_snapshot(self.latest)
        self.push_screen(screen)

    def action_topology(self) -> None:
        """Open the topology screen (or close it when it is on top)."""
        from gputui.tui.screens.topology import TopologyScreen

        if isinstance(self.screen, TopologyScreen):
            self.screen.dismiss(None)
            return
        screen = TopologyScreen(self.dashboard.node, self.sampler.history)
        if self.latest is not None:
            screen.update_snapshot(self.latest)
        self.push_screen(screen)

    def action_probe(self) -> None:
        """Open the probe screen (key p closes it, cancelling a running probe)."""
        from gputui.tui.screens.probe import ProbeScreen

        if self.readonly or isinstance(self.screen, ProbeScreen):
            return  # a replay is read-only too
        screen = ProbeScreen(self.dashboard.node, self.latest, session_factory=self.probe_session)
        self.push_screen(screen)

    def action_toggle_dark(self) -> None:
        if self.current_theme.dark:
            self._dark_theme = self.theme
            self.theme = LIGHT_THEME
        else:
            self.theme = self._dark_theme

    def action_select_gpu(self, index: int | None) -> None:
        self.dashboard.select_gpu(index)

    # -- recording ---------------------------------------------------------------------------------

    def action_toggle_record(self) -> None:
        if self.readonly:  # a replay is read-only too
            return
        if self.recording is None:
            self.start_recording()
        else:
            self.stop_recording()

    def start_recording(self) -> None:
        """Write every reading from now on to a new file in :attr:`record_dir`."""
        if self.recording is not None or self.readonly:
            return
        try:
            session = start_session(
                self.dashboard.node, self.record_dir, self._post_recording_error
            )
        except RecordingRefused as refused:
            self.notify(str(refused), title="record", severity="error")
            return
        self.recording = session
        self.sampler.add_listener(session.write)
        self.dashboard.show_recording(True)
        self.notify(f"recording to {session.path}", title="record", timeout=4)

    def stop_recording(self, *, quiet: bool = False) -> None:
        """Detach the recorder and close its file."""
        session = self.recording
        if session is None:
            return
        self.recording = None
        self.sampler.remove_listener(session.write)
        error = session.close()
        if quiet:
            return
        self.dashboard.show_recording(False)
        if error is not None:
            self.notify(f"closing {session.path} failed: {error}", title="record", severity="error")
        else:
            self.notify(
                f"recorded {session.count} reading{'s' if session.count != 1 else ''} "
                f"to {session.path}",
                title="record",
                timeout=6,
            )

    def _post_recording_error(self, error: BaseException) -> None:
        self.post_message(RecordingFailed(error))  # from the polling thread

    def on_recording_failed(self, message: RecordingFailed) -> None:
        session = self.recording
        if session is None:
            return
        self.notify(
            f"recording stopped: {message.error}",  # the error names the file
            title="record",
            severity="error",
            timeout=10,
        )
        self.stop_recording(quiet=True)
        self.dashboard.show_recording(False)

    # -- replay ------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Replay keys only in replay mode; the display pause only live; recording and the probe
        neither in a replay nor with ``--readonly`` (off: the footer and the key say why)."""
        if action in READONLY_DISABLED:
            return None if self.readonly else True  # a replay is read-only too
        if action == "toggle_pause":
            return self.replay is None
        if not action.startswith("replay_"):
            return True
        if self.replay is None:
            return False
        if action in REPLAY_SEEK_ACTIONS:
            try:
                return self.screen is self.dashboard and not isinstance(self.focused, Input)
            except Exception:  # no screen yet
                return False
        return True

    def why_disabled(self, action: str) -> str | None:
        """Why ``check_action`` turns ``action`` off (the footer and the key's notice say it)."""
        return self.readonly_reason if self.readonly and action in READONLY_DISABLED else None

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """Run ``action``; one that is off here (a replay, ``--readonly``) says why instead."""
        if await super().run_action(action, default_namespace, namespaces):
            return True
        notice = unavailable_notice(self, action, default_namespace or self, namespaces)
        if notice is None:
            return False
        self.notify(notice.message, title=notice.title, severity=notice.severity)
        return True

    def show_replay_status(self) -> None:
        if self.replay is not None:
            self.dashboard.show_replay(ReplayStatus.of(self.replay))

    def _check_replay_end(self) -> None:
        replay = self.replay
        if replay is None:
            return
        if not replay.at_end:
            self._replay_ended = False
            return
        if not self._replay_ended:  # the title bar says "end"
            self._replay_ended = True
            replay.set_paused(True)

    def action_replay_play(self) -> None:
        """Play or pause the replay (space; the display pause of a live session)."""
        replay = self.replay
        if replay is None:
            return
        if replay.paused and replay.at_end:  # play at the end: from the start again
            self._seek(replay.start)
        replay.set_paused(not replay.paused)
        self.show_replay_status()

    def action_replay_seek(self, seconds: float) -> None:
        replay = self.replay
        if replay is None:
            return
        replay.seek_relative(float(seconds))
        self._after_seek()

    def action_replay_start(self) -> None:
        if self.replay is not None:
            self._seek(self.replay.start)

    def action_replay_end(self) -> None:
        if self.replay is not None:
            self._seek(self.replay.end)

    def _seek(self, timestamp: float) -> None:
        assert self.replay is not None
        self.replay.seek(timestamp)
        self._after_seek()

    def _after_seek(self) -> None:
        """Plots restart from the new position: history rebuilds as the replay plays."""
        self._replay_ended = False
        self._quiet_findings = True
        self.sampler.history.clear()
        self.sampler.refresh_now()
        self.show_replay_status()

    def action_replay_speed(self, factor: float) -> None:
        replay = self.replay
        if replay is None:
            return
        speed = clamp_speed(replay.speed * float(factor))
        replay.set_speed(speed)
        self.show_replay_status()  # the title bar shows the speed

    # -- signals -----------------------------------------------------------------------------------

    def on_signal_requested(self, message: SignalRequested) -> None:
        self.send_signal(message.process, message.sig)

    def send_signal(self, process: ProcessSample, sig: signal.Signals) -> None:
        """Send ``sig`` off the UI thread (the backend lock may be held by a poll)."""
        if self.readonly:
            return
        self._signal_worker(process, sig)

    def on_acknowledge_findings(self, message: AcknowledgeFindings) -> None:
        """A cheap locked call on the health monitor: fine on the UI thread."""
        for key in message.keys:
            self.sampler.acknowledge(key)

    @work(thread=True, group="signal", exit_on_error=False)
    def _signal_worker(self, process: ProcessSample, sig: signal.Signals) -> None:
        # The PID carries the start time shown: the backend checks, right before sending, that
        # the PID still names that process (not one that took the PID while the dialog was open).
        target = ProcessRef(process.pid, process.start_time)
        try:
            self.sampler.signal_process(target, sig)
        except Exception as exc:  # ProcessLookupError, PermissionError, backend errors
            self.post_message(SignalSent(process, sig, exc))
        else:
            self.post_message(SignalSent(process, sig))

    def on_signal_sent(self, message: SignalSent) -> None:
        notice = signal_notice(message.process.pid, message.sig, message.error)
        self.notify(notice.message, title=notice.title, severity=notice.severity)
        if message.error is None:
            self.dashboard.signal_sent(message.process, message.sig)  # the row says so at once
            if self.start_sampler:
                self.sampler.refresh_now(processes=True)


__all__ = ["GpuTuiApp"]
