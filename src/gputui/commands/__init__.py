"""One module per sub-command; :mod:`gputui.cli` parses the arguments and calls ``run`` here.

Each command opens its readings through :mod:`gputui.session`, prints (stdout for results,
stderr for messages) and returns an exit status from :mod:`gputui.exitcodes`.
"""
