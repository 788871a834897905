"""Dashboard widgets. GPU panels, host strip and title bar are Line-API widgets
(:class:`~gputui.tui.widgets.line_widget.LineWidget`) that repaint only the cells that changed."""
