"""The contract every registered synthesizer keeps, checked for each entry of ``synth.registry`` (as
scikit-learn's ``parametrize_with_checks`` checks every estimator): a method registered tomorrow is checked
by these tests without a line added here.

- same model and seed, same traces (a round's data can be made again);
- seeded training gives the same model, unless the method's noise is differential privacy's (``fresh_noise``);
- traces the platform's own reader accepts (``scoring.io.read_traces`` on the model's grid), of the users,
  days and slots asked for;
- a bad training parameter or generation option is refused with its name.

Training runs once per method, on a small city (a 12 x 12 grid, 120 people, 2 days), with the method's
cheapest training parameters.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from scoring.grid import Grid
from scoring.io import read_traces, to_bytes, write_traces
from scoring.traces import Traces
from synth import methods, registry
from synth.city import CityModel

GRID = Grid(nx=12, ny=12, hospitals=())
SLOTS = 20
#: The cheapest training of each built-in method (checked against its schema below); others train on defaults.
SMALL = {"ppmtf": dict(K=4, sweeps=2), "sglt": dict(clusters=4, partners=4), "coloc": dict(min_users=20)}
NAMES = list(methods.METHODS)


@pytest.fixture(scope="module")
def training() -> Traces:
    return CityModel(GRID, seed=0).simulate(120, 2)


def _train(name: str, traces: Traces, seed: int):
    return methods.train_model(name, traces, GRID, slots_per_day=SLOTS, slot_start_minute=480, slot_minutes=30,
                               seed=seed, **SMALL.get(name, {}))


@pytest.fixture(scope="module")
def models(training) -> dict:
    """Each method's model (seed 5), trained once for the module's checks."""
    return {}


def _model(models: dict, training: Traces, name: str):
    if name not in models:
        models[name] = _train(name, training, 5)
    return models[name]


def _sample(model, seed: int, users: int = 15, days: int = 2) -> np.ndarray:
    return methods.make_synthesizer(model, slots=SLOTS).sample_set(users, days, np.random.default_rng(seed))


def test_the_small_training_parameters_are_the_methods_own():
    for name, params in SMALL.items():
        assert not registry.problems(registry.get(name).training, params, what="a training parameter"), name


@pytest.mark.parametrize("name", NAMES)
def test_the_same_model_and_seed_give_the_same_traces(name, models, training):
    model = _model(models, training, name)
    assert np.array_equal(_sample(model, 9), _sample(model, 9)), f"{name} is not deterministic given its seed"


@pytest.mark.parametrize("name", NAMES)
def test_seeded_training_gives_the_same_model(name, models, training, tmp_path):
    if registry.get(name).fresh_noise:
        pytest.skip(f"{name}'s training noise is differential privacy's, never seeded")
    first, again = _model(models, training, name), _train(name, training, 5)
    first.save(tmp_path / "a.npz")
    again.save(tmp_path / "b.npz")
    a, b = methods.load_model(tmp_path / "a.npz"), methods.load_model(tmp_path / "b.npz")
    assert np.array_equal(_sample(a, 9), _sample(b, 9)), f"{name}: the same seed trained another model"


@pytest.mark.parametrize("name", NAMES)
def test_the_traces_are_a_file_the_platform_reads(name, models, training):
    regions = _sample(_model(models, training, name), 3)
    assert regions.shape == (15, 2, SLOTS), regions.shape
    flat = regions.reshape(15, 2 * SLOTS).astype(np.int32)
    traces = Traces(np.arange(1, 16, dtype=np.int64), np.arange(1, 2 * SLOTS + 1, dtype=np.int64), flat)
    back = read_traces(to_bytes(write_traces, traces), GRID)
    assert np.array_equal(back.regions, flat)


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_training_parameter_is_refused_with_its_name(name):
    found = methods.check_synthesizer_params({"no_such_parameter": 1}, name)
    assert [key for key, _value, _expected in found] == ["no_such_parameter"]
    for key in registry.get(name).training:
        found = methods.check_synthesizer_params({key: object()}, name)
        assert [k for k, _value, _expected in found] == [key], (name, key)


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_generation_option_is_refused_with_its_name(name, models, training):
    model = _model(models, training, name)
    with pytest.raises(ValueError, match="options.no_such_option"):
        methods.make_synthesizer(model, slots=SLOTS, no_such_option=1)
    for key in registry.get(name).options:
        with pytest.raises(ValueError, match=f"options.{key}"):
            methods.make_synthesizer(model, slots=SLOTS, **{key: object()})


def test_the_platforms_training_data_asks_the_registry_and_names_no_method():
    """What a method needs of an organizer's traces is its registry entry's (``least_users``), not a branch
    on its name in contest/services/training_data.py."""
    source = Path(__file__).resolve().parents[2] / "contest" / "services" / "training_data.py"
    literals = {node.value for node in ast.walk(ast.parse(source.read_text()))
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not literals & set(registry.names()), literals & set(registry.names())
    assert registry.get("coloc").least_users({"min_users": 40})[0] == 40
