"""Reads the ResourceManager: REST API first, the web UI's Cluster Metrics table as a fallback."""

from amtuner.monitor.rest import REASONS, ObservationError

__all__ = ["REASONS", "ObservationError"]
