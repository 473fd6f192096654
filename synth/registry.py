"""One registry of the synthesizer methods, as ``scoring.algorithms.registry`` is of the judge's algorithms.

A method's own module registers it once (:func:`register`) with everything the
platform and the command line need of it: its schema (training parameters and
generation options, each with its type and bounds), its train function, its
synthesizer factory, how a model file is loaded and how a model is described in
a round's manifest. :mod:`synth.methods` answers every question about "the
contest's method" from here, with no per-method branch; adding a method is one
module that ends with ``register(Method(...))`` and one import in
:mod:`synth.methods` (README, "Adding a method").

A *check* is a pair ``(ok, expected)``: ``ok(value)`` says whether a value is
acceptable and ``expected`` says in words what is (``"an integer in [1, 50]"``),
for the error that names a refused value. The helpers below build them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Check = tuple[Callable[[Any], bool], str]


# ---------------------------------------------------------------------------
# Checks of one parameter's value
# ---------------------------------------------------------------------------
def int_check(lo, hi=None) -> Check:
    """(check, what is expected) of an integer parameter in [lo, hi] (also for ``contest.services.parameters``)."""
    def ok(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
    return ok, f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"


def number_check(lo, hi, *, open_lo=False) -> Check:
    """(check, what is expected) of a finite number in [lo, hi] (or (lo, hi] with ``open_lo``)."""
    def ok(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            return False
        return (v > lo if open_lo else v >= lo) and v <= hi
    return ok, f"a number in {'(' if open_lo else '['}{lo}, {hi}]"


def choice_check(*values) -> Check:
    """(check, what is expected) of a parameter taking one of ``values``."""
    return (lambda v: v in values), f"one of {', '.join(values)}"


def bool_check() -> Check:
    """(check, what is expected) of a true/false parameter."""
    return (lambda v: isinstance(v, bool)), "true or false"


def with_reason(check: Check, reason: str) -> Check:
    """``check`` whose expected text also says why the bound is there."""
    return check[0], f"{check[1]} ({reason})"


def problems(checks: dict[str, Check], values: dict, *, what: str, prefix: str = "") -> list[tuple[str, object, str]]:
    """``(key, value, expected)`` of every entry of ``values`` that ``checks`` refuses (an unknown key is refused
    too: a misspelt key would otherwise be ignored silently); ``what`` names the kind of key in that error
    (``"an option of the sglt synthesizer"``), ``prefix`` goes before each key (``"options."``)."""
    out = []
    for key, value in values.items():
        if key not in checks:
            out.append((f"{prefix}{key}", value, f"{what} ({', '.join(sorted(checks))})"))
        elif not checks[key][0](value):
            out.append((f"{prefix}{key}", value, checks[key][1]))
    return out


# ---------------------------------------------------------------------------
# Methods
# ---------------------------------------------------------------------------
def _no_city_params(city, train_users: int, params: dict) -> dict:
    return params


@dataclass(frozen=True)
class Method:
    """A registered synthesizer method.

    Attributes:
        name: the method's name in model files (``meta.method``), ``Contest.synthesizer`` and ``--method``.
        title: one line saying what it is and where it comes from.
        training: {parameter: check} of its training parameters (keywords of ``train``).
        options: {option: check} of its generation options (keywords of ``synthesizer``).
        train: ``train(traces, grid, *, slots_per_day, slot_start_minute, slot_minutes, seed, progress,
            **training) -> model``; the model has ``method`` (this name), ``nx``, ``ny``, ``grid()`` and
            ``save(dest)``.
        synthesizer: ``synthesizer(model, *, slots, slot_start_minute, slot_step_minutes, **options)`` ->
            an object with ``S`` (slots per day), ``sample_set(users, n_days, rng) -> (users, n_days, S)``
            0-based regions and ``options() -> dict``; optionally ``friends`` and ``stats`` of the last set
            (see :func:`synth.generate.generate_set`).
        load: ``load(path | bytes | binary file) -> model``.
        generator, generator_version: the generator's name and version in a round's manifest.
        describe: ``describe(model) -> dict`` with ``params``: the model's public description for a manifest.
        city_training: defaults of ``train_users`` and ``train_days`` when a contest trains on the built-in city.
        city_params: ``city_params(city, train_users, params) -> params``: the training parameters that follow
            from the built-in city (coloc: its POI categories and its size as the public ``min_users``).
        train_contest: a method's own way to train a contest's model on the city, ``train_contest(grid, axis, *,
            seed, city_seed, progress, **params)`` (PPMTF+: on a longer day than the contest's), or None for
            the common one (:func:`synth.methods.train_contest_model`).
        fresh_noise: the method's training noise is differential privacy's: it always comes from fresh
            operating-system randomness, never from a seed (:func:`synth.methods.training_seed`).
        least_users: ``least_users(training params) -> (n, why)``: the fewest users of training traces the
            method trains on with these parameters and, in words, why (coloc: its public ``min_users``); None
            when any two users do. The platform refuses an organizer's traces with fewer users at once.
    """

    name: str
    title: str
    training: dict[str, Check]
    options: dict[str, Check]
    train: Callable
    synthesizer: Callable
    load: Callable
    generator: str
    generator_version: str
    describe: Callable[[Any], dict]
    city_training: dict = field(default_factory=lambda: dict(train_users=300, train_days=10))
    city_params: Callable[[Any, int, dict], dict] = _no_city_params
    train_contest: Callable | None = None
    fresh_noise: bool = False
    least_users: Callable[[dict], tuple[int, str]] | None = None

    def option_problems(self, options: dict, *, label: str | None = None) -> list[tuple[str, object, str]]:
        """``(key, value, expected)`` of every generation option this method refuses; ``label`` names the
        synthesizer in the error (default: the method's name)."""
        return problems(self.options, options, what=f"an option of the {label or self.name} synthesizer",
                        prefix="options.")


class UnknownMethod(KeyError, ValueError):
    """A method name nobody registered (a KeyError for mappings, a ValueError for callers checking input)."""

    def __str__(self) -> str:
        return str(self.args[0])


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Register ``method`` under its name (once)."""
    if method.name in _METHODS:
        raise ValueError(f"synthesizer method {method.name!r} registered twice")
    _METHODS[method.name] = method
    return method


def get(name: str) -> Method:
    """The method registered as ``name``."""
    try:
        return _METHODS[name]
    except (KeyError, TypeError):
        raise UnknownMethod(f"unknown method {name!r}; expected one of {', '.join(sorted(_METHODS))}") from None


def names() -> tuple[str, ...]:
    """The registered methods' names, in registration order."""
    return tuple(_METHODS)
