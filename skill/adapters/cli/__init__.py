"""Command-line adapter (terminal output)."""
