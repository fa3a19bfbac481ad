"""amtuner: keeps a YARN cluster's ApplicationMaster share right while the cluster runs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("amtuner")
    """From the installed distribution, whose version the build took from git (setuptools-scm):
    each commit's build has its own."""
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"
