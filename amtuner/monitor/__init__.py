"""Reads the ResourceManager: REST API first, the web UI's pages as a fallback (the Cluster
Metrics table; a CapacityScheduler's leaves and users for the waits)."""

from amtuner.monitor.client import RMClient, make_session
from amtuner.monitor.fields import REASONS, ObservationError

__all__ = ["REASONS", "ObservationError", "RMClient", "make_session"]
