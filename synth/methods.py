"""The synthesizer methods behind one interface: train, load, synthesize, check a contest's parameters.

=========  ===============================================================  =====================
method     what                                                             module
=========  ===============================================================  =====================
``ppmtf``  PPMTF+ (per-user tensor-factorisation features; PPMTF.md)         ``synth.ppmtf``,
                                                                            ``synth.generate``
``sglt``   semantic fake traces (seed 002: semantic classes, randomised     ``synth.sglt``
           Viterbi, privacy tests with plausible deniability)
``coloc``  co-location-aware traces with differential privacy (seed 003:    ``synth.coloc``
           friendship probability, co-location counts, DP transitions)
=========  ===============================================================  =====================

Every model file stores its method (``meta.method``; files without it are
PPMTF models), so ``python -m synth generate MODEL.npz`` writes the same
contest files (SPEC 4 and 5) whatever the method.

A contest picks its method with ``Contest.synthesizer`` (``ppmtf``, ``sglt``,
``coloc``, or ``city``: the built-in city's people directly) and its
parameters with ``Contest.synthesizer_params``, checked by
:func:`check_synthesizer_params` against the method's schema (:data:`SCHEMAS`).
"""
from __future__ import annotations

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.traces import Traces
from synth import coloc, sglt
from synth.common import model_method

METHODS = {
    "ppmtf": "PPMTF+ (per-user latent features, PPMTF.md)",
    "sglt": "semantic fake traces with privacy tests (seed 002, Bindschaedler and Shokri)",
    "coloc": "co-location-aware traces with differential privacy (seed 003, Narita et al.)",
}
#: What ``Contest.synthesizer`` may be: the methods plus the city model's people without training.
CONTEST_SYNTHESIZERS = tuple(METHODS) + ("city",)


def load_model(source):
    """The model in a model file (path, bytes or binary file object), whatever its method."""
    from synth.ppmtf import PPMTFModel
    method = model_method(source)
    loaders = {"ppmtf": PPMTFModel.load, "sglt": sglt.SGLTModel.load, "coloc": coloc.ColocModel.load}
    if method not in loaders:
        raise ValueError(f"model file of unknown method {method!r}; known: {', '.join(loaders)}")
    return loaders[method](source)


def method_of(model) -> str:
    return getattr(model, "method", "ppmtf")


def make_synthesizer(model, *, slots: int = 20, slot_start_minute: float = 480, slot_step_minutes: float = 30,
                     **options):
    """The model's synthesizer on the contest day; ``options`` are the method's generation options."""
    from synth.generate import Synthesizer
    classes = {"ppmtf": Synthesizer, "sglt": sglt.SGLTSynthesizer, "coloc": coloc.ColocSynthesizer}
    return classes[method_of(model)](model, slots=slots, slot_start_minute=slot_start_minute,
                                     slot_step_minutes=slot_step_minutes, **options)


#: Figures computed from the training data that some model files keep (organizer-only files) but a manifest
#: beside the generated data never carries: the number of training users, sglt's similarity statistics.
TRAINING_DATA_FIGURES = ("training_users", "semantic_similarity_mean", "pairs")


def model_summary(model) -> tuple[str, str, dict]:
    """(generator name, generator version, model description) for a round's manifest: public parameters and
    (coloc) noisy values only, never a figure computed from the training data."""
    from synth.generate import GENERATOR_VERSION
    method = method_of(model)
    if method == "ppmtf":
        name, version, desc = "PPMTF+", GENERATOR_VERSION, dict(
            method="ppmtf", version=model.version, K=model.K, M=model.M, T=model.T, nx=model.nx, ny=model.ny,
            slot_start_minute=model.slot_start_minute, slot_minutes=model.slot_minutes, params=model.params)
    elif method == "sglt":
        name, version, desc = "SGLT", sglt.GENERATOR_VERSION, model.describe()
    else:
        name, version, desc = "coloc", coloc.GENERATOR_VERSION, model.describe()
    desc["params"] = {k: v for k, v in desc["params"].items() if k not in TRAINING_DATA_FIGURES}
    return name, version, desc


def train_model(method: str, traces: Traces, grid: Grid, *, slots_per_day: int, slot_start_minute: float,
                slot_minutes: float, seed: int, progress=None, **params):
    """Train ``method`` on ``traces``; ``params`` are the method's training parameters."""
    if method == "ppmtf":
        from synth.ppmtf import train
        return train(traces, grid, slots_per_day=slots_per_day, slot_start_minute=slot_start_minute,
                     slot_minutes=slot_minutes, seed=seed, progress=progress, **params)
    if method == "sglt":
        return sglt.train(traces, grid, slots_per_day=slots_per_day, slot_start_minute=slot_start_minute,
                          slot_minutes=slot_minutes, seed=seed, progress=progress, **params)
    if method == "coloc":
        return coloc.train(traces, grid, slots_per_day=slots_per_day, slot_start_minute=slot_start_minute,
                           slot_minutes=slot_minutes, seed=seed, progress=progress, **params)
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")


# ---------------------------------------------------------------------------
# Contest parameters
# ---------------------------------------------------------------------------
def int_check(lo, hi=None):
    """(check, what is expected) of an integer parameter in [lo, hi] (also for ``contest.services.parameters``)."""
    def ok(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
    return ok, f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"


def number_check(lo, hi, *, open_lo=False):
    """(check, what is expected) of a finite number in [lo, hi] (or (lo, hi] with ``open_lo``)."""
    def ok(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            return False
        return (v > lo if open_lo else v >= lo) and v <= hi
    return ok, f"a number in {'(' if open_lo else '['}{lo}, {hi}]"


def choice_check(*values):
    """(check, what is expected) of a parameter taking one of ``values``."""
    return (lambda v: v in values), f"one of {', '.join(values)}"


def bool_check():
    """(check, what is expected) of a true/false parameter."""
    return (lambda v: isinstance(v, bool)), "true or false"


def with_reason(check, reason: str):
    """``check`` (a (check, expected) pair) whose expected text also says why the bound is there."""
    return check[0], f"{check[1]} ({reason})"


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
#: Per method: training parameters and generation options, each with its check (type and bounds; a bound
#: that is there to keep a round within the machine says so).
SCHEMAS = {
    "ppmtf": dict(
        training={"K": int_check(1, 256), "sweeps": int_check(1, 1000),
                  "lead_minutes": (int_check(0, 720)[0], "minutes, an integer in [0, 720] (a multiple of the slot "
                                                     "length)"),
                  "tail_minutes": (int_check(0, 720)[0], "minutes, an integer in [0, 720] (a multiple of the slot "
                                                     "length)")},
        # synth.generate.Synthesizer's keywords (PPMTF.md 4.1-4.4)
        options={"instant_minutes": with_reason(number_check(1, 60), "minutes between the instants of a trace; "
                                                                     "fewer than 1 would hold a day's instants "
                                                                     "for every user in memory"),
                 "home": bool_check(), "read_trans": bool_check(), "read_visit": bool_check(),
                 "gamma": number_check(0, 1000), "home_minutes": number_check(0, 1440),
                 "delta": number_check(0, 1, open_lo=True),
                 "batch_bytes": with_reason(int_check(1 << 20, 1 << 30), "bytes of one generation batch: "
                                                                        "the worker holds a batch in memory")}),
    "sglt": dict(
        training={"periods": int_check(1, 48),
                  "clusters": ((lambda v: v == "auto" or int_check(1, 10_000)[0](v)), "an integer in [1, 10000] or auto"),
                  "partners": int_check(1, 10_000),
                  "alt_fraction": number_check(0, 0.9), "eps": number_check(0, 1e6, open_lo=True)},
        # k, max_tries, width and pd_candidates multiply the work per fake (defaults 2, 10, 16, 50): each is
        # bounded at 10-25 times its default, so a set takes at most minutes, not the job's whole limit.
        options={"par_c": number_check(0, 1), "par_l": number_check(0, 1), "par_m": number_check(0, 1),
                 "par_v": number_check(1, 1e6), "par_s": number_check(0, 1), "par_i": number_check(0, 1),
                 "par_d": number_check(0, 1),
                 "k": with_reason(int_check(1, 50), "plausible deniability's k; work per fake grows with it"),
                 "max_tries": with_reason(int_check(1, 100), "draws per fake; work grows with it"),
                 "width": with_reason(int_check(1, 256), "candidates per step; work grows with it"),
                 "pd_candidates": with_reason(int_check(1, 1000), "alternatives examined per fake; work grows "
                                                                 "with it")}),
    "coloc": dict(
        training={"eps1": number_check(0, 1e6, open_lo=True), "eps2": number_check(0, 1e6, open_lo=True),
                  "eps3": number_check(0, 1e6, open_lo=True), "c": int_check(1, 10_000), "c_trans": int_check(1, 10_000),
                  "mechanism": choice_check(*coloc.MECHANISMS), "hierarchy": choice_check("blocks", "categories"),
                  "successors": int_check(1, 1024), "min_meetings": int_check(1, 10_000),
                  "min_users": int_check(2, 100_000)},
        options={"theta": with_reason(int_check(0, 100_000), "co-location events planted per set: each takes two "
                                                              "user-instants, and a 2019-size set has fewer free "
                                                              "ones; planting loops until it has them"),
                 "par_v": number_check(1, 1e6),
                 "max_rounds": with_reason(int_check(1, 1000), "planting rounds per set; work grows with it")}),
}
# The city's people without training rehearse a PPMTF+ contest: its parameters are checked as PPMTF+'s.
SCHEMAS["city"] = SCHEMAS["ppmtf"]
#: Defaults of a contest's training parameters per method (``ppmtf``: set by ``python -m synth calibrate``).
CONTEST_TRAINING = {
    "ppmtf": None,   # synth.generate.CONTEST_DEFAULTS
    "sglt": dict(train_users=300, train_days=10),
    "coloc": dict(train_users=300, train_days=10),
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
    schema = SCHEMAS[method]
    checks = {**_COMMON, **schema["training"]}
    problems = []
    for key, value in params.items():
        if key not in checks:
            problems.append((key, value, f"a known parameter of the {method} synthesizer "
                                         f"({', '.join(sorted(checks))})"))
        elif not checks[key][0](value):
            problems.append((key, value, checks[key][1]))
    options = params.get("options")
    if isinstance(options, dict):
        for key, value in options.items():
            if key not in schema["options"]:
                problems.append((f"options.{key}", value, f"an option of the {method} synthesizer "
                                                         f"({', '.join(sorted(schema['options']))})"))
            elif not schema["options"][key][0](value):
                problems.append((f"options.{key}", value, schema["options"][key][1]))
    return problems


def city_categories(city) -> np.ndarray:
    """(M,) dominant POI category of each region of a :class:`~synth.city.CityModel` (-1: none)."""
    M = city.grid.M
    K = int(city.poi_category.max()) + 1 if len(city.poi_category) else 1
    counts = np.bincount(np.asarray(city.poi_region) * K + city.poi_category, minlength=M * K).reshape(M, K)
    return np.where(counts.sum(1) > 0, counts.argmax(1), -1)


def train_contest_model(method: str, grid: Grid, axis: TimeAxis, *, seed: int, city_seed: int = 0, progress=None,
                        **params):
    """A contest's model of ``method`` trained on the built-in city's people (seeded like PPMTF+'s).

    PPMTF+ goes through :func:`synth.generate.train_contest_model` (its full day and
    calibrated defaults); the other methods train on the contest's own day.
    """
    from synth.city import CityModel
    from synth.generate import train_contest_model as train_ppmtf
    if method == "ppmtf":
        return train_ppmtf(grid, axis, seed=seed, city_seed=city_seed, progress=progress, **params)
    p = {**CONTEST_TRAINING[method], **params}
    city = CityModel(grid, seed=int(city_seed))
    n_train = int(p.pop("train_users"))
    training = city.simulate(n_train, int(p.pop("train_days")), time_axis=axis, seed=seed)
    if method == "coloc" and p.get("hierarchy") == "categories":
        p["hierarchy"] = [city_categories(city)]
    if method == "coloc":
        # The city's size is the contest's public parameter: p''s noise is calibrated on training sets of at
        # least train_users - 1 users (every neighbour of the city by removal).
        p.setdefault("min_users", max(2, n_train - 1))
    return train_model(method, training, grid, slots_per_day=axis.slots_per_day,
                       slot_start_minute=axis.start_minute, slot_minutes=axis.slot_minutes,
                       seed=training_seed(method, seed), progress=progress, **p)


def training_seed(method: str, seed: int | None) -> int | None:
    """The seed a method trains with: ``seed``, except for the DP method (coloc), whose noise always comes
    from fresh operating-system randomness: whoever knows or guesses a noise seed (a contest's seed, the
    command line's default) can draw the same noise and subtract it. The model is stored once trained, so a
    re-run of the round reuses it; the city's people are still simulated from ``seed``."""
    return None if method == "coloc" else seed
