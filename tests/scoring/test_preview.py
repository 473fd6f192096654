"""The privacy preview: the judge's attacks on one set, with what each learnt per user."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from scoring import io as sio
from scoring import scores
from scoring.algorithms.registry import get, judge_defaults
from scoring.cli import main
from scoring.grid import Grid, TimeAxis
from scoring.preview import AttackOutcome, derived_seed, leak_map, per_user_rows, preview, run_attack
from scoring.pseudonymize import pseudonymize
from scoring.traces import AnonymizedTraces, Traces

GRID = Grid()
AXIS = TimeAxis(slots_per_day=20, ref_days=2, org_days=2)


def population(m: int = 60, seed: int = 3):
    """Users who each live among a home and three favourite regions: (reference, original)."""
    rng = np.random.default_rng(seed)
    favourites = rng.integers(0, GRID.M, size=(m, 4))
    weights = np.array([0.55, 0.25, 0.12, 0.08])

    def draw(n_slots: int, first: int) -> Traces:
        pick = rng.choice(4, size=(m, n_slots), p=weights)
        regions = np.take_along_axis(favourites, pick, axis=1).astype(np.int32)
        return Traces(np.arange(1, m + 1, dtype=np.int64), np.arange(first, first + n_slots, dtype=np.int64),
                      regions)

    return draw(AXIS.ref_slots, 1), draw(AXIS.org_slots, AXIS.ref_slots + 1)


def test_each_attack_equals_the_registered_attack_scored_directly():
    reference, original = population()
    anon = AnonymizedTraces.from_traces(original, GRID.M)
    pseud = pseudonymize(anon, seed=11)
    for algorithm in judge_defaults():
        seed = derived_seed(5, algorithm.name)
        outcome = run_attack(algorithm, GRID, reference, pseud.pubtraces, seed=seed, original=original,
                             true_users=pseud.user_ids, axis=AXIS)
        out = algorithm.run(GRID, reference, pseud.pubtraces, seed=seed,
                            **algorithm.resolve(algorithm.axis_params(AXIS)))
        if algorithm.kind == "reidentification":
            assert np.array_equal(outcome.output, out)
            assert outcome.score == scores.reidentification(pseud.user_ids, out)
        else:
            assert np.array_equal(outcome.output.regions, out.regions)
            assert outcome.score == scores.trace_inference(GRID, original, out)


def test_per_user_contributions_sum_to_the_scores():
    reference, original = population()
    result = preview(GRID, reference, original, AnonymizedTraces.from_traces(original, GRID.M), seed=2,
                     axis=AXIS)
    assert [a.name for a in result.attacks] == [a.name for a in judge_defaults()]
    for a in result.attacks:
        assert a.contribution.sum() == pytest.approx(a.score, abs=1e-12)
        if a.kind == "reidentification":
            assert 1.0 - a.reidentified.mean() == pytest.approx(a.score, abs=1e-12)
    header, rows = per_user_rows(original, result.attacks)
    cols = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    assert cols["user_id"] == list(range(1, 61))
    assert sum(cols["s_i_contribution"]) == pytest.approx(result.s_i_min, abs=1e-12)
    assert sum(cols["s_t_contribution"]) == pytest.approx(result.s_t_min, abs=1e-12)
    # Un-anonymized traces of users with distinct favourite places: I2 re-identifies most of them.
    i2 = next(a for a in result.attacks if a.name == "I2-VisitProb")
    assert i2.reidentified.mean() > 0.8
    assert sum(n > 0 for n in cols["n_reidentified"]) >= i2.reidentified.sum()
    named = [row for row in rows if "I2-VisitProb" in row[1].split(";")]
    assert len(named) == i2.reidentified.sum()


def test_users_are_reported_in_original_order_whatever_the_pseudonyms():
    reference, original = population(m=30)
    anon = AnonymizedTraces.from_traces(original, GRID.M)
    a = preview(GRID, reference, original, anon, seed=1, axis=AXIS, attacks=["I2-VisitProb"])
    b = preview(GRID, reference, original, anon, seed=99, axis=AXIS, attacks=["I2-VisitProb"])
    assert not np.array_equal(a.pseudonymized.user_ids, b.pseudonymized.user_ids)
    # Exact I2 does not depend on the pseudonym order, so the same users are named either way.
    assert np.array_equal(a.attacks[0].reidentified, b.attacks[0].reidentified)


def test_an_invalid_set_is_previewed_but_marked():
    reference, original = population(m=20)
    deleted = AnonymizedTraces(original.user_ids, original.time_ids,
                               np.full(original.regions.shape, GRID.M, dtype=np.int32),
                               AnonymizedTraces.from_traces(original, GRID.M).sets)
    result = preview(GRID, reference, original, deleted, seed=4, axis=AXIS)
    assert result.s_u == 0.0 and not result.valid
    assert result.as_dict()["valid"] is False and len(result.as_dict()["attacks"]) == 6


def test_leak_map_counts_home_and_exposed_regions_of_reidentified_users():
    # Two users; user 1 always at region 5, user 2 always at 9. Both re-identified by a fake outcome.
    original = Traces(np.array([1, 2]), np.arange(41, 81), np.array([[5] * 40, [9] * 40], dtype=np.int32))
    anon = AnonymizedTraces.from_traces(original, GRID.M)
    events = anon.events.copy()
    events[1, :10] = GRID.M  # user 2's first 10 events deleted
    anon = AnonymizedTraces(anon.user_ids, anon.time_ids, events, anon.sets)
    reid = AttackOutcome("X", "reidentification", 0, {}, None, 0.0,
                        reidentified=np.array([True, True]),
                        contribution=np.zeros(2))
    leaks = leak_map(GRID, original, anon, [reid], axis=AXIS)
    assert leaks["users"] == 2
    assert leaks["home"][5] == 1 and leaks["home"][9] == 1 and leaks["home"].sum() == 2
    assert leaks["exposed"][5] == 40 and leaks["exposed"][9] == 30
    assert leaks["frequent"].sum() == 2


def test_preview_command_prints_the_same_figures(tmp_path, capsys):
    reference, original = population(m=40)
    anon = get("A3-kRR").run(GRID, original, seed=1, eps=4.0)
    paths = {name: tmp_path / f"{name}.csv" for name in ("ref", "org", "ano")}
    sio.write_traces(reference, paths["ref"])
    sio.write_traces(original, paths["org"])
    sio.write_anotraces(anon, paths["ano"])
    per_user = tmp_path / "per_user.csv"
    assert main(["preview", str(paths["ref"]), str(paths["org"]), str(paths["ano"]), "--seed", "8",
                 "--per-user", str(per_user)]) == 0
    lines = dict(line.split(" ", 1) for line in capsys.readouterr().out.splitlines())
    expected = preview(GRID, reference, original, anon, seed=8)
    assert float(lines["s_I,min"]) == expected.s_i_min
    assert float(lines["s_T,min"]) == expected.s_t_min
    assert lines["seed"] == "8"
    with open(per_user) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 40
    assert sum(float(r["s_i_contribution"]) for r in rows) == pytest.approx(expected.s_i_min)
