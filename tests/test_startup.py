"""What a start loads: the command line and the dashboard's first frame import what they draw and
run, not every command's implementation, the exporter, the fleet view, the probe or the screens
behind a key. Each case runs in a fresh interpreter and lists ``sys.modules``. How fast a start
is, is measured by ``benchmarks/bench_compare.py`` (next to nvitop), not here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

COMMAND_IMPLEMENTATIONS = tuple(
    f"gputui.commands.{name}"
    for name in (
        "check",
        "config",
        "export",
        "fleet",
        "incident_files",
        "interrupt",
        "pick",
        "pick_wait",
        "probe",
        "record",
        "snapshot",
        "specs",
        "topo",
    )
)
"""The sub-commands' own modules (and their helpers): imported when that command runs."""

NOT_FOR_THE_DASHBOARD = (
    *COMMAND_IMPLEMENTATIONS,
    "gputui.export",  # the Prometheus exporter
    "gputui.fleet",  # the fleet view's HTTP client and PromQL
    "gputui.probe",  # the performance probe
    "gputui.views",  # the text reports of snapshot / check
    "gputui.engine.incidents",  # incident files (record / export --incidents)
    "gputui.core.record",  # recordings: written when R is pressed, read by --replay
    "gputui.tui.fleet",
    "gputui.tui.screens.topology",  # the screens behind a key
    "gputui.tui.screens.probe",
    "gputui.tui.screens.probe_panels",
    "gputui.tui.screens.probe_session",
    "gputui.tui.screens.help",
    "gputui.tui.screens.findings",
    "gputui.tui.screens.environ",
    "gputui.tui.screens.process_detail",
    "gputui.tui.screens.confirm_signal",
    "prometheus_client",
    "torch",
)


def loaded_by(script: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script) + "\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def found(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (modules or whole packages) among ``modules``."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_the_command_line_loads_no_command() -> None:
    """``gputui --help`` / ``--version``: the parser of every command, none of their code, no
    Textual and no engine."""
    modules = loaded_by(
        """
        import sys
        from gputui import cli

        cli.build_parser().format_help()
        """
    )
    assert "gputui.commands.parsers.check" in modules  # the case loads what it should
    assert found(modules, (*NOT_FOR_THE_DASHBOARD, "gputui.commands.dashboard")) == []
    assert found(modules, ("textual", "gputui.tui", "gputui.engine.session")) == []


def test_a_command_loads_its_own_module_when_it_runs() -> None:
    modules = loaded_by(
        """
        import sys
        from gputui import cli
        from gputui.commands.common import Common

        args = cli.build_parser().parse_args(["specs", "H100"])
        cli.COMMANDS["specs"].options(args, Common.from_args(args))
        """
    )
    assert "gputui.commands.specs" in modules
    others = tuple(m for m in NOT_FOR_THE_DASHBOARD if m != "gputui.commands.specs")
    assert found(modules, (*others, "textual")) == []


def test_the_dashboard_draws_its_first_frame_without_the_rest() -> None:
    """The dashboard as ``gputui --demo`` starts it (the command line, the settings, the
    session, the app), run headless until the first reading is on screen."""
    modules = loaded_by(
        """
        import asyncio, sys
        from gputui import cli
        from gputui.commands.common import Common
        from gputui.commands.settings_from_args import settings_for

        parser = cli.build_parser()
        args = parser.parse_args(["--demo"])
        options = cli.DEFAULT.options(args, Common.from_args(args, settings_for(args, parser)))
        from gputui.engine.session import open_session
        from gputui.tui.app import GpuTuiApp

        session = open_session(options.spec, defer_topology=True, settings=options.settings)

        async def first_frame() -> None:
            app = GpuTuiApp(session.sampler, settings=options.settings)
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(200):
                    await pilot.pause(0.05)
                    if app.latest is not None:
                        break
                assert app.latest is not None, "no reading shown"
                await pilot.pause()

        asyncio.run(first_frame())
        session.close()
        """
    )
    assert "gputui.tui.screens.dashboard" in modules  # the case loads what it should
    assert found(modules, NOT_FOR_THE_DASHBOARD) == []
