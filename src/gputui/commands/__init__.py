"""One module per sub-command, each with ``options`` and ``run``
(:class:`gputui.commands.common.Runner`), and its command line (``add_parser``) in
:mod:`gputui.commands.parsers`; :mod:`gputui.cli` lists them
(:class:`~gputui.commands.common.LazyCommand`) and imports a command's module when it runs.

Each command opens its readings through :mod:`gputui.engine.session`
(``session_open.open_or_report``), prints (stdout for results, stderr for messages,
:mod:`gputui.commands.output`) and returns an exit status from :mod:`gputui.core.exitcodes`.
"""
