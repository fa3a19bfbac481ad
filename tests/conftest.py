"""Shared test settings: hypothesis profiles.

"ci" is deterministic so a red build can be reproduced; "dev" explores new examples each run.
Neither has a deadline: the test machine is shared and timing is not what these tests check.
Select with AMTUNER_HYPOTHESIS_PROFILE=ci|dev; CI=<anything> selects "ci".
"""

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None, database=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(
    os.environ.get("AMTUNER_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_configure(config: object) -> None:
    """The tests run the simulator core compiled, as the benchmarks do, when it can be built
    here (once per change of its sources); `tests/sim/test_native.py` holds the Python modules
    to the same results."""
    from amtuner.sim import native

    native.ensure_built(quiet=True)
