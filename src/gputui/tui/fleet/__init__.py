"""``gputui fleet``'s Textual app: every node (:class:`~gputui.tui.fleet.screens.FleetScreen`)
and one node's GPUs with history (:class:`~gputui.tui.fleet.screens.NodeScreen`), fed by the core
in :mod:`gputui.fleet`."""
