"""Scout: per-packet telemetry and latency attribution for the 5G user plane."""

from scout.events import Run, open_run

__all__ = ["Run", "open_run", "__version__"]
__version__ = "0.1.0"
