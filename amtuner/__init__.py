"""amtuner: keeps a YARN cluster's ApplicationMaster share right while the cluster runs."""

__version__ = "0.1.0"
