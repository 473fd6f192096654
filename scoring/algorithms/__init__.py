"""Sample anonymizers and attacks of the judge; see :mod:`scoring.algorithms.registry`."""
from .registry import Algorithm, Param, all_algorithms, get, judge_defaults, register  # noqa: F401
