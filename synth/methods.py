"""The synthesizer methods behind one interface: train, load, synthesize, check a contest's parameters.

=========  ===============================================================  =====================
method     what                                                             module
=========  ===============================================================  =====================
``ppmtf``  PPMTF+ (per-user tensor-factorisation features; PPMTF.md)         ``synth.ppmtf``,
                                                                            ``synth.ppmtf_plus``
``sglt``   semantic fake traces (seed 002: semantic classes, randomised     ``synth.sglt``
           Viterbi, privacy tests with plausible deniability)
``coloc``  co-location-aware traces with differential privacy (seed 003:    ``synth.coloc``
           friendship probability, co-location counts, DP transitions)
=========  ===============================================================  =====================

Each method's module registers it once (:mod:`synth.registry`): its schema,
train function, synthesizer, model loading and manifest description. This
module imports them (so the registry is complete once it is imported) and
answers every question through the registry, with no per-method branch.

Every model file stores its method (``meta.method``; files without it are
PPMTF models), so ``python -m synth generate MODEL.npz`` writes the same
contest files (rules §4 and 5) whatever the method.

A contest picks its method with ``Contest.synthesizer`` (``ppmtf``, ``sglt``,
``coloc``, or ``city``: the built-in city's people directly) and its
parameters with ``Contest.synthesizer_params``, checked by
:func:`check_synthesizer_params` against the method's schema (:data:`SCHEMAS`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

from scoring.grid import Grid, TimeAxis
from scoring.traces import Traces
from synth import coloc, ppmtf_plus, registry, sglt
from synth.city import CityModel
from synth.common import model_method

# the checks contest.services.parameters builds its own with
from synth.registry import choice_check, int_check, number_check  # noqa: F401

#: The built-in methods' modules: each registers its method when imported. Listed in this order (PPMTF+
#: first, the default), then any method registered later.
BUILT_IN = (ppmtf_plus, sglt, coloc)
#: The city's people without training rehearse a PPMTF+ contest: its parameters are checked as PPMTF+'s.
CITY_REHEARSES = ppmtf_plus.METHOD


def _names() -> tuple[str, ...]:
    """The registered methods: the built-in ones in :data:`BUILT_IN` order, then the others."""
    registered = registry.names()
    first = tuple(module.METHOD for module in BUILT_IN if module.METHOD in registered)
    return first + tuple(name for name in registered if name not in first)


class _Titles(Mapping):
    """{method: title} of every registered method, in :func:`_names` order (live: a method registered later
    is listed)."""

    def __getitem__(self, name: str) -> str:
        return registry.get(name).title

    def __iter__(self) -> Iterator[str]:
        return iter(_names())

    def __len__(self) -> int:
        return len(registry.names())


class _Schemas(Mapping):
    """{method: {"training": checks, "options": checks}} of every registered method and of ``city``."""

    def __getitem__(self, name: str) -> dict:
        m = registry.get(CITY_REHEARSES if name == "city" else name)
        return dict(training=m.training, options=m.options)

    def __iter__(self) -> Iterator[str]:
        return iter((*_names(), "city"))

    def __len__(self) -> int:
        return len(registry.names()) + 1


METHODS: Mapping[str, str] = _Titles()
#: Per method: training parameters and generation options, each with its check (type and bounds; a bound
#: that is there to keep a round within the machine says so).
SCHEMAS: Mapping[str, dict] = _Schemas()
#: What ``Contest.synthesizer`` may be: the built-in methods plus the city model's people without training.
CONTEST_SYNTHESIZERS = tuple(METHODS) + ("city",)


def load_model(source):
    """The model in a model file (path, bytes or binary file object), whatever its method."""
    method = model_method(source)
    try:
        m = registry.get(method)
    except registry.UnknownMethod:
        raise ValueError(f"model file of unknown method {method!r}; known: {', '.join(METHODS)}") from None
    return m.load(source)


def method_of(model) -> str:
    """The method of a trained model."""
    return model.method


def make_synthesizer(model, *, slots: int = 20, slot_start_minute: float = 480, slot_step_minutes: float = 30,
                     **options):
    """The model's synthesizer on the contest day; ``options`` are the method's generation options.

    This is where the options' types and bounds are checked (the method's schema): a refused option is a
    ValueError naming each bad option, its value and what is expected.
    """
    m = registry.get(method_of(model))
    bad = m.option_problems(options)
    if bad:
        raise ValueError("; ".join(f"{key} = {value!r}: expected {expected}" for key, value, expected in bad))
    return m.synthesizer(model, slots=slots, slot_start_minute=slot_start_minute,
                         slot_step_minutes=slot_step_minutes, **options)


#: Figures computed from the training data that some model files keep (organizer-only files) but a manifest
#: beside the generated data never carries: the number of training users, sglt's similarity statistics.
TRAINING_DATA_FIGURES = ("training_users", "semantic_similarity_mean", "pairs")


def model_summary(model) -> tuple[str, str, dict]:
    """(generator name, generator version, model description) for a round's manifest: public parameters and
    (coloc) noisy values only, never a figure computed from the training data."""
    m = registry.get(method_of(model))
    desc = m.describe(model)
    desc["params"] = {k: v for k, v in desc["params"].items() if k not in TRAINING_DATA_FIGURES}
    return m.generator, m.generator_version, desc


def train_model(method: str, traces: Traces, grid: Grid, *, slots_per_day: int, slot_start_minute: float,
                slot_minutes: float, seed: int, progress=None, **params):
    """Train ``method`` on ``traces``; ``params`` are the method's training parameters."""
    return registry.get(method).train(traces, grid, slots_per_day=slots_per_day, slot_start_minute=slot_start_minute,
                                      slot_minutes=slot_minutes, seed=seed, progress=progress, **params)


# ---------------------------------------------------------------------------
# Contest parameters
# ---------------------------------------------------------------------------
#: The largest day pool a round's sporadic days are drawn from: the pool is drawn as an array of its days,
#: and the 2019 final round's was 30 days; 1000 days (almost three years) is past any contest calendar.
MAX_POOL_DAYS = 1000


_COMMON = {
    "city_seed": int_check(0),
    "train_users": int_check(2, 100_000),
    "train_days": int_check(1, 365),
    "pool_days": ((lambda v: v is None or int_check(1, MAX_POOL_DAYS)[0](v)),
                  f"an integer in [1, {MAX_POOL_DAYS}] (at least the round's reference + original days; the "
                  "pool is held as an array of its days)"),
    "day_split": choice_check("chronological", "random"),
    "options": ((lambda v: isinstance(v, dict)), "a mapping of the method's generation options"),
}


def check_synthesizer_params(params, method: str = "ppmtf") -> list[tuple[str, object, str]]:
    """Problems of a contest's ``synthesizer_params`` for ``method``: ``(key, value, expected)`` per bad entry.

    An empty list means the parameters can be used. Unknown keys are
    problems (a misspelt key would otherwise be ignored silently), and so are
    keys of another method.
    """
    if method not in SCHEMAS:
        return [("synthesizer", method, f"one of {', '.join(CONTEST_SYNTHESIZERS)}")]
    if not isinstance(params, dict):
        return [("synthesizer_params", params, "a mapping")]
    m = registry.get(CITY_REHEARSES if method == "city" else method)
    found = registry.problems({**_COMMON, **m.training}, params, what=f"a known parameter of the {method} synthesizer")
    if isinstance(params.get("options"), dict):
        found += m.option_problems(params["options"], label=method)
    return found


def train_contest_model(method: str, grid: Grid, axis: TimeAxis, *, seed: int, city_seed: int = 0, progress=None,
                        **params):
    """A contest's model of ``method`` trained on the built-in city's people (seeded like PPMTF+'s).

    A method with its own way (PPMTF+: :func:`synth.ppmtf_plus.train_contest_model`, its full day and
    calibrated defaults) goes through it; the others train on the contest's own day, on the method's
    ``city_training`` users and days and the parameters that follow from the city (``city_params``).
    """
    m = registry.get(method)
    if m.train_contest is not None:
        return m.train_contest(grid, axis, seed=seed, city_seed=city_seed, progress=progress, **params)
    p = {**m.city_training, **params}
    city = CityModel(grid, seed=int(city_seed))
    n_train = int(p.pop("train_users"))
    training = city.simulate(n_train, int(p.pop("train_days")), time_axis=axis, seed=seed)
    p = m.city_params(city, n_train, p)
    return train_model(method, training, grid, slots_per_day=axis.slots_per_day,
                       slot_start_minute=axis.start_minute, slot_minutes=axis.slot_minutes,
                       seed=training_seed(method, seed), progress=progress, **p)


def training_seed(method: str, seed: int | None) -> int | None:
    """The seed a method trains with: ``seed``, except for a method whose noise is differential privacy's
    (coloc, ``fresh_noise``), whose noise always comes from fresh operating-system randomness: whoever knows
    or guesses a noise seed (a contest's seed, the command line's default) can draw the same noise and
    subtract it. The model is stored once trained, so a re-run of the round reuses it; the city's people are
    still simulated from ``seed``."""
    return None if registry.get(method).fresh_noise else seed
