"""Scout's exceptions, importable without the heavy dependencies (the CLI starts with them)."""


class RunError(Exception):
    """A run directory that cannot be read; the message names the file and the problem."""


class UsageError(Exception):
    """A command-line argument or output place that cannot be used; the message says what is
    wrong and what is accepted."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the CLI's handler so that it stops the work the way Ctrl-C does."""


def interrupted(e: BaseException) -> bool:
    """Whether ``e`` is DuckDB's form of Ctrl-C: it catches SIGINT while a query runs and raises
    RuntimeError("Query interrupted") (through Ibis too) instead of KeyboardInterrupt, and
    duckdb.InterruptException when the connection is interrupted. Code that turns a database's
    exceptions into its own messages re-raises these as KeyboardInterrupt."""
    if isinstance(e, RuntimeError) and "Query interrupted" in str(e):
        return True
    return any(c.__name__ == "InterruptException" for c in type(e).__mro__)
