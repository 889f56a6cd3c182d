"""Scout's exceptions, importable without the heavy dependencies (the CLI starts with them)."""


class RunError(Exception):
    """A run directory that cannot be read; the message names the file and the problem."""


class UsageError(Exception):
    """A command-line argument or output place that cannot be used; the message says what is
    wrong and what is accepted."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the CLI's handler so that it stops the work the way Ctrl-C does."""
