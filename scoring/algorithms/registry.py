"""One registry of the judge's algorithms: sample anonymizers and attacks (rules §10).

Every algorithm is a pure function of numpy data and a seeded
``numpy.random.Generator``, registered under its contest name (``A2-MRLH``,
``I2-VisitProb``, ...) with typed parameters and defaults, so the platform and
the command line can list, describe and run any of them the same way.

Call signatures by kind:

- ``anonymizer``: ``fn(grid, original: Traces, rng, **params) -> AnonymizedTraces``
  (same users and time ids as ``original``).
- ``reidentification``: ``fn(grid, reference: Traces, pub: AnonymizedTraces, rng, **params)
  -> np.ndarray`` of shape (n_pseudonyms,), the estimated user id of each
  pseudonym in ascending pseudonym order (an etable).
- ``trace_inference``: ``fn(grid, reference: Traces, pub: AnonymizedTraces, rng, **params)
  -> Traces``: the estimated original traces of users ``reference.user_ids``
  at the time ids of ``pub``, in (user_id, time_id) order (an etraces).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scoring.vocabulary import AlgorithmKind

KINDS = tuple(AlgorithmKind)


@dataclass(frozen=True)
class Param:
    """A typed parameter with its default and a one-line meaning (and source)."""

    name: str
    type: type
    default: Any
    doc: str = ""
    #: The value this parameter takes on a contest's :class:`~scoring.grid.TimeAxis`, when it
    #: follows from the axis (a slot count, the slots of a window); ``None`` when it does not.
    from_axis: Callable[[Any], Any] | None = None
    #: The values a text parameter may take (empty: any); checked whatever the run uses, so a misspelt
    #: choice is refused with its name rather than ignored by a run that does not read it.
    choices: tuple[str, ...] = ()

    def parse(self, text: str):
        """Convert a command-line/form value to this parameter's type."""
        if self.type is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"parameter {self.name}: expected true/false, got {text!r}")
        try:
            return self.type(text)
        except ValueError:
            raise ValueError(f"parameter {self.name}: expected {self.type.__name__}, got {text!r}") from None


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm: name, kind, parameters, documentation, function."""

    name: str
    kind: str
    fn: Callable
    params: tuple[Param, ...] = field(default_factory=tuple)
    doc: str = ""
    judge_default: bool = False  # one of the six attacks the judge runs by default

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def resolve(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """Defaults updated by ``overrides``; unknown names are an error naming the valid ones."""
        values = self.defaults()
        known = {p.name: p for p in self.params}
        for key, value in (overrides or {}).items():
            if key not in known:
                raise ValueError(f"{self.name} has no parameter {key!r} "
                                 f"(parameters: {', '.join(known) or 'none'})")
            values[key] = known[key].parse(value) if isinstance(value, str) else value
            if known[key].choices and values[key] not in known[key].choices:
                raise ValueError(f"{self.name}: parameter {key}: expected one of "
                                 f"{', '.join(map(repr, known[key].choices))}, got {values[key]!r} "
                                 f"({known[key].doc})")
        return values

    def axis_params(self, axis) -> dict[str, Any]:
        """Parameter values that follow from the contest's time axis (rules §3).

        ``slots_per_day`` (the slot of the day of a time id) and HomeProb's
        ``home_slots`` (the slots starting within 8:00-8:59) default to the
        2019 axis; a contest with another :class:`~scoring.grid.TimeAxis`
        passes these to :meth:`run`: ``alg.run(..., **alg.axis_params(axis))``.
        Only the parameters of this algorithm that follow from the axis
        (:attr:`Param.from_axis`) are returned.
        """
        return {p.name: p.from_axis(axis) for p in self.params if p.from_axis is not None}

    def run(self, *args, seed: int | None = None, rng: np.random.Generator | None = None, **overrides):
        """Run with defaults updated by ``overrides``; deterministic given ``seed``."""
        if rng is None:
            rng = np.random.default_rng(seed)
        return self.fn(*args, rng, **self.resolve(overrides))


_REGISTRY: dict[str, Algorithm] = {}


def register(name: str, kind: str, params=(), judge_default: bool = False):
    """Decorator registering ``fn`` as algorithm ``name``; its docstring is the documentation."""
    if kind not in KINDS:
        raise ValueError(f"unknown algorithm kind {kind!r}")

    def wrap(fn):
        if name in _REGISTRY:
            raise ValueError(f"algorithm {name!r} registered twice")
        _REGISTRY[name] = Algorithm(name, kind, fn, tuple(params), (fn.__doc__ or "").strip(),
                                    judge_default)
        return fn

    return wrap


def get(name: str) -> Algorithm:
    # Complete whoever imports this module: the package ``scoring.algorithms`` imports this
    # module and then the modules that register their algorithms (anonymizers, attacks,
    # reference_attacks), and Python runs the package before any of its modules.
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def all_algorithms(kind: str | None = None) -> list[Algorithm]:
    return [a for a in _REGISTRY.values() if kind is None or a.kind == kind]


def judge_defaults() -> list[Algorithm]:
    """The attacks the judge runs on every valid set by default (I1-I3, T1-T3)."""
    return [a for a in all_algorithms() if a.judge_default]
