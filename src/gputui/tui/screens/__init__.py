"""Screens: the dashboard, help, process detail and the signal confirmation."""
