"""One module per sub-command, each with ``add_parser``, ``options`` and ``run``
(:class:`gputui.commands.common.Command`); :mod:`gputui.cli` lists them and calls them.

Each command opens its readings through :mod:`gputui.engine.session`
(``session_open.open_or_report``), prints (stdout for results, stderr for messages,
:mod:`gputui.commands.output`) and returns an exit status from :mod:`gputui.core.exitcodes`.
"""
