"""Adding a synthesizer method is one registration (synth/registry.py).

A tiny method, ``stay`` (each virtual user draws a home from the training
visits and stays there, except a share of slots drawn at random), is
registered here and nowhere else. The public functions that the platform and
the command line call (``synth.methods``, ``synth.generate``) then list it,
check its parameters against its schema, train it on the built-in city, save
and load its model file, and write a round of its data sets.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from synth import methods, registry
from synth.common import read_npz, save_npz
from synth.generate import generate_round

GRID = Grid(nx=12, ny=12, hospitals=())


@dataclass
class StayModel:
    """Training visit counts per region, (M,) float64, on an ``nx`` x ``ny`` grid."""

    visits: np.ndarray
    nx: int
    ny: int
    params: dict
    method: ClassVar[str] = "stay"

    def grid(self) -> Grid:
        return Grid(nx=self.nx, ny=self.ny, hospitals=())

    def save(self, dest) -> None:
        save_npz(dest, dict(method=self.method, version="stay-1", nx=self.nx, ny=self.ny, params=self.params),
                 dict(visits=self.visits))

    @classmethod
    def load(cls, source) -> StayModel:
        meta, arrays = read_npz(source, "stay", "stay-1", ("visits",))
        return cls(arrays["visits"], int(meta["nx"]), int(meta["ny"]), meta["params"])


def train_stay(traces, grid, *, slots_per_day, slot_start_minute, slot_minutes, seed, progress=None, prior=1.0):
    """Visit counts of every region plus ``prior`` (a region nobody visited can still be drawn)."""
    visits = np.bincount(traces.regions.ravel(), minlength=grid.M) + float(prior)
    return StayModel(visits, grid.nx, grid.ny, dict(prior=float(prior), seed=seed))


class StaySynthesizer:
    """(users, days, slots) regions: each user's home from the visit counts; ``wander`` of the slots elsewhere."""

    def __init__(self, model, *, slots, slot_start_minute, slot_step_minutes, wander=0.0):
        self.model, self.S, self.wander = model, int(slots), float(wander)

    def options(self) -> dict:
        return dict(wander=self.wander)

    def sample_set(self, users, n_days, rng):
        p = self.model.visits / self.model.visits.sum()
        home = rng.choice(len(p), size=users, p=p)
        out = np.broadcast_to(home[:, None, None], (users, n_days, self.S)).copy()
        away = rng.random(out.shape) < self.wander
        out[away] = rng.choice(len(p), size=int(away.sum()), p=p)
        return out.astype(np.int32)


STAY = registry.Method(
    name="stay", title="stay at home (a test method)",
    training={"prior": registry.number_check(0, 100)},
    options={"wander": registry.number_check(0, 1)},
    train=train_stay, synthesizer=StaySynthesizer, load=StayModel.load,
    generator="stay", generator_version="stay-gen-1",
    describe=lambda model: dict(method=model.method, M=len(model.visits), params=model.params),
    city_training=dict(train_users=30, train_days=2))


@pytest.fixture
def stay(monkeypatch):
    """``stay`` registered for one test (the registry is restored afterwards)."""
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    registry.register(STAY)
    return STAY


def test_the_built_in_methods_are_registered_once_each():
    assert list(methods.METHODS) == ["ppmtf", "sglt", "coloc"]
    assert methods.CONTEST_SYNTHESIZERS == ("ppmtf", "sglt", "coloc", "city")
    assert methods.SCHEMAS["city"] == methods.SCHEMAS["ppmtf"]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(registry.get("sglt"))
    with pytest.raises(ValueError, match="unknown method 'nope'; expected one of coloc, ppmtf, sglt"):
        methods.train_model("nope", None, GRID, slots_per_day=20, slot_start_minute=480, slot_minutes=30, seed=0)


def test_a_method_added_by_one_registration_is_listed_checked_trained_loaded_and_generated(stay, tmp_path):
    assert "stay" in methods.METHODS and methods.METHODS["stay"] == "stay at home (a test method)"
    assert set(methods.SCHEMAS["stay"]["options"]) == {"wander"}

    # its schema checks a contest's parameters, and its options on the way to a synthesizer
    assert methods.check_synthesizer_params({"prior": 2.0, "train_users": 30, "options": {"wander": 0.25}},
                                            "stay") == []
    bad = methods.check_synthesizer_params({"prior": -1, "K": 8, "options": {"wander": 2, "theta": 1}}, "stay")
    assert [(key, value) for key, value, _ in bad] == [("prior", -1), ("K", 8), ("options.wander", 2),
                                                       ("options.theta", 1)]
    assert bad[2][2] == "a number in [0, 1]"

    # trained by the contest's path on the built-in city, with the method's own city defaults
    axis = TimeAxis(ref_days=2, org_days=2)
    model = methods.train_contest_model("stay", GRID, axis, seed=4, prior=0.5)
    assert methods.method_of(model) == "stay" and model.params == dict(prior=0.5, seed=4)
    assert model.visits.sum() == pytest.approx(30 * 2 * 20 + 0.5 * GRID.M)     # 30 users x 2 days x 20 slots
    assert methods.training_seed("stay", 4) == 4

    path = tmp_path / "stay.npz"
    model.save(path)
    loaded = methods.load_model(path.read_bytes())
    assert isinstance(loaded, StayModel) and np.array_equal(loaded.visits, model.visits)

    with pytest.raises(ValueError, match=r"options.wander = 1.5: expected a number in \[0, 1\]"):
        methods.make_synthesizer(loaded, wander=1.5)

    out = tmp_path / "round"
    manifest = generate_round(loaded, out, 1, users=10, ref_days=2, org_days=2, seed=3, wander=0.0)
    assert (manifest["generator"], manifest["generator_version"]) == ("stay", "stay-gen-1")
    assert manifest["model"]["params"] == dict(prior=0.5, seed=4)
    assert manifest["parameters"]["synthesizer"] == dict(wander=0.0)
    assert len(manifest["sets"]) == 2 * 4                                        # team, benchmark, 2 samples
    assert json.loads((out / "manifest.json").read_text()) == manifest
    ref = read_traces(out / "reftraces_team001_data01_IDP.csv", GRID)
    assert ref.regions.shape == (10, 2 * 20)
    assert (ref.regions == ref.regions[:, :1]).all()                            # wander 0: everyone stays home


def test_a_method_removed_from_the_registry_is_unknown_everywhere(stay, monkeypatch):
    monkeypatch.setattr(registry, "_METHODS", {k: v for k, v in registry._METHODS.items() if k != "stay"})
    assert "stay" not in methods.METHODS and "stay" not in methods.SCHEMAS
    assert methods.check_synthesizer_params({}, "stay") == [("synthesizer", "stay", "one of ppmtf, sglt, coloc, "
                                                                                    "city")]
