"""Scout's exceptions, importable without the heavy dependencies (the CLI starts with them)."""


class RunError(Exception):
    """A run directory that cannot be read; the message names the file and the problem."""
