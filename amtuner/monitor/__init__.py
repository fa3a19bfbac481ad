"""Reads the ResourceManager: REST API first, the web UI's Cluster Metrics table as a fallback."""

from amtuner.monitor.client import RMClient, make_session
from amtuner.monitor.fields import REASONS, ObservationError

__all__ = ["REASONS", "ObservationError", "RMClient", "make_session"]
