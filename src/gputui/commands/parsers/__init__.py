"""Each sub-command's command line: one module per command with its ``add_parser`` (name, help,
options, their defaults), light enough to import with every command line.

:mod:`gputui.cli` builds the whole parser from these and imports a command's implementation
(:mod:`gputui.commands`, ``options`` and ``run``) only when that command runs: ``gputui --help``,
``gputui --version`` and the dashboard do not pay for the imports of ``check``, ``export``,
``fleet``, ``probe``... (``tests/test_startup.py`` holds it).
"""
