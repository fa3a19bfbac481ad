"""Hadoop's own ResourceManager on this machine: what tests and `amtuner bench real` run against.

`build` compiles the Maven module in the repository's ``realyarn/`` (a MiniYARNCluster launcher);
`cluster` starts it with a conf directory of its own and stops it without leaving a process;
`apps` submits the load over the RM's REST API.
"""

from amtuner.realyarn.build import Unavailable
from amtuner.realyarn.cluster import ClusterSpec, RealRM

__all__ = ["ClusterSpec", "RealRM", "Unavailable"]
