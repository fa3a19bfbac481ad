"""The simulated ResourceManager: a discrete-event model of YARN's schedulers behind its REST API.

Its core runs compiled when a build of the current sources exists (`amtuner.sim.native`).
"""

from amtuner.sim import native as _native

_native.activate()
