"""Sample anonymizers and attacks of the judge; see :mod:`scoring.algorithms.registry`.

The registry module defines :func:`register`; the three modules below register their
algorithms when imported. Importing them here, after the registry, makes the registry
complete for whoever imports anything of this package, with no import going back up.
"""
from . import anonymizers, attacks, reference_attacks  # noqa: F401  (they register themselves)
from .registry import Algorithm, Param, all_algorithms, get, judge_defaults, register  # noqa: F401
