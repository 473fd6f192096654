"""Semantic fake traces (seed 002): similarities, semantic seeds, the privacy test, reproducibility."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from scoring.grid import Grid
from synth import sglt
from synth.city import CityModel
from synth.methods import make_synthesizer

GRID = Grid(nx=12, ny=12, hospitals=())


@pytest.fixture(scope="module")
def model():
    traces = CityModel(GRID, seed=2).simulate(60, 4, seed=3)
    return sglt.train(traces, GRID, slots_per_day=20, periods=2, clusters=8, partners=10, seed=5)


def _brute_semantic(pu, pv, w):
    M = pu.shape[1]
    best = 0.0
    for perm in itertools.permutations(range(M)):
        best = max(best, float(np.einsum("p,pr->", w, np.minimum(pu, pv[:, list(perm)]))))
    return best


def test_semantic_similarity_is_the_best_mapping():
    rng = np.random.default_rng(0)
    w = np.array([0.25, 0.75])
    for _ in range(20):
        pu = rng.random((2, 6)) * (rng.random((2, 6)) < 0.6)
        pv = rng.random((2, 6)) * (rng.random((2, 6)) < 0.6)
        pu /= np.maximum(pu.sum(1, keepdims=True), 1e-12)
        pv /= np.maximum(pv.sum(1, keepdims=True), 1e-12)
        sim, src, dst = sglt.semantic_similarity(pu, pv, w)
        assert sim == pytest.approx(_brute_semantic(pu, pv, w))
        assert len(set(src)) == len(src) and len(set(dst)) == len(dst)          # a (partial) permutation
        assert sim == pytest.approx(float(np.einsum("p,pr->", w, np.minimum(pu[:, src], pv[:, dst]))))


def test_one_period_similarity_matches_sorted_profiles():
    # With a single period, min is supermodular: pairing both profiles in sorted order is optimal.
    rng = np.random.default_rng(1)
    pu, pv = rng.dirichlet(np.ones(30))[None], rng.dirichlet(np.ones(30) * 0.3)[None]
    sim, _, _ = sglt.semantic_similarity(pu, pv, np.ones(1))
    assert sim == pytest.approx(np.minimum(np.sort(pu[0]), np.sort(pv[0])).sum())
    assert sglt.geographic_similarity(pu, pu, np.ones(1)) == pytest.approx(1.0)


def test_model_shapes_and_classes(model, tmp_path):
    assert model.classes.shape == (GRID.M,)
    visited = model.profiles[~model.alternative].any(axis=(0, 1))
    assert ((model.classes >= 0) == visited).all()                          # regions no seed visited: no class
    assert np.allclose(model.p_bar.sum(axis=2), 1.0, atol=1e-5)
    assert model.alternative.sum() == 30                                   # alt_fraction 0.5 of 60
    model.save(tmp_path / "m.npz")
    again = sglt.SGLTModel.load(tmp_path / "m.npz")
    assert (again.classes == model.classes).all() and again.params == model.params


def test_semantic_seed_removes_the_seed_location(model):
    syn = sglt.SGLTSynthesizer(model, par_l=1.0, par_c=0.0, par_m=0.9)
    rng = np.random.default_rng(4)
    seeds = rng.choice(syn.seed_users, size=40)
    seq = syn._seed_days(seeds, 3, rng)
    cand = syn._candidates(seq, rng)
    own = (cand == seq[..., None]).any(axis=3)
    # Unless a semantic set came out empty (replaced by the period's most visited regions),
    # the seed's own location is never a candidate.
    fallback = (cand == syn.fallback[syn.period][None, None]).all(axis=3)
    assert not (own & ~fallback).any()
    # Without merging, every candidate is in the seed's class.
    solo = sglt.SGLTSynthesizer(model, par_l=1.0, par_c=0.0, par_m=0.0)._candidates(seq, rng)
    solo_fb = (solo == syn.fallback[syn.period][None, None]).all(axis=3)
    same = (solo < 0) | (model.classes[np.maximum(solo, 0)] == model.classes[seq][..., None])
    assert (same.all(axis=3) | solo_fb).all()
    fakes = syn._decode(cand, rng)
    assert ((fakes[..., None] == cand).any(axis=3)).all()                  # the path stays in the sets
    assert not (fakes == seq).any()


def test_privacy_test_acceptance_rule(model):
    syn = sglt.SGLTSynthesizer(model, k=3, par_d=0.05, par_s=0.5, par_i=0.2, pd_candidates=1000)
    rng = np.random.default_rng(7)
    seeds = rng.choice(syn.seed_users, size=25)
    seq = syn._seed_days(seeds, 4, rng)
    fakes = syn._decode(syn._candidates(seq, rng), rng)
    fakes[:5] = seq[:5]                                                     # copies of their seeds
    test = syn.privacy_test(fakes, seeds, seq, rng)
    pf = syn.fake_profiles(fakes)
    w = syn.w
    for i in range(len(fakes)):
        ps = model.profiles[seeds[i]].astype(float)
        sim_g = float(np.einsum("p,p->", w, np.minimum(pf[i], ps).sum(1)))
        inter = float(ps.any(axis=0)[fakes[i]].mean())                  # events at places the seed visited
        assert test["sim_g"][i] == pytest.approx(sim_g)
        assert test["intersection"][i] == pytest.approx(inter)
        own = sglt.semantic_similarity(ps, pf[i], w)[0]
        close = sum(abs(own - sglt.semantic_similarity(model.profiles[a].astype(float), pf[i], w)[0]) < 0.05
                    for a in syn.alt_users)
        geo_int = sim_g <= 0.5 and inter <= 0.2
        assert test["geo_ok"][i] == (sim_g <= 0.5) and test["int_ok"][i] == (inter <= 0.2)
        # Deniability is only examined for fakes passing the other tests: k-1 = 2 close alternatives.
        if geo_int:
            assert test["pd_ok"][i] == (close >= 2)
        assert test["accept"][i] == (geo_int and close >= 2)
    assert not test["accept"][:5].any()                                    # a copy of the seed never passes


def test_only_fakes_passing_the_test_are_written(model):
    syn = sglt.SGLTSynthesizer(model, k=3, par_d=0.05, par_s=0.5, par_i=0.3, pd_candidates=1000, max_tries=30)
    out = syn.sample_set(40, 2, np.random.default_rng(0))
    st = syn.stats
    assert st["draws"] > 40 and st["dropped"] == st["draws"] - 40 and st["failing"] == 0   # some were dropped
    assert st["failing_deniability"] <= st["deniability_tested"] <= st["draws"]
    again = syn.privacy_test(out, syn.seed_of, None, np.random.default_rng(1))
    assert again["accept"].all()                                           # every written fake passes


def test_a_set_that_cannot_be_filled_fails_with_the_test_and_parameter(model):
    syn = sglt.SGLTSynthesizer(model, par_s=-1.0, max_tries=3)
    with pytest.raises(sglt.PrivacyTestError, match=r"10 of 10 fakes still fail the privacy test after 30 draws; "
                       r"relax par_s .*geographic similarity > par_s = -1.0: 30 of 30 draws"):
        syn.sample_set(10, 2, np.random.default_rng(0))
    syn = sglt.SGLTSynthesizer(model, k=30, par_d=0.0, max_tries=2)
    with pytest.raises(sglt.PrivacyTestError, match="relax par_d or k"):
        syn.sample_set(5, 2, np.random.default_rng(0))


def test_intersection_is_about_the_seeds_visited_locations(model):
    syn = sglt.SGLTSynthesizer(model, par_i=1.0, par_s=1.0, k=1)
    rng = np.random.default_rng(3)
    seeds = rng.choice(syn.seed_users, size=30)
    seq = syn._seed_days(seeds, 2, rng)
    fakes = syn._decode(syn._candidates(seq, rng), rng)
    shifted = np.roll(seq, 1, axis=2)                                       # the seed's places at other slots
    test = syn.privacy_test(shifted, seeds, seq, rng)
    assert (test["intersection"] == 1.0).all() and (shifted != seq).any()  # same-slot comparison missed these
    strict = sglt.SGLTSynthesizer(model, par_i=0.0, par_s=1.0, k=1).privacy_test(fakes, seeds, seq, rng)
    visited = model.profiles[seeds].any(axis=1)
    hit = np.take_along_axis(visited, fakes.reshape(30, -1), axis=1).any(axis=1)
    assert (strict["int_ok"] == ~hit).all()


def test_aggregate_model_and_classes_come_from_the_seeds_only():
    traces = CityModel(GRID, seed=2).simulate(60, 4, seed=3)
    m = sglt.train(traces, GRID, slots_per_day=20, periods=2, clusters=8, partners=10, seed=5)
    seeds = ~m.alternative
    assert np.allclose(m.pi_bar, m.profiles[seeds].astype(float).mean(axis=0), atol=1e-6)
    only_alt = m.profiles[m.alternative].any(axis=(0, 1)) & ~m.profiles[seeds].any(axis=(0, 1))
    assert (m.classes[only_alt] == -1).all()                                # places only alternatives visited


def test_reproducible_by_seed(model):
    traces = CityModel(GRID, seed=2).simulate(60, 4, seed=3)
    again = sglt.train(traces, GRID, slots_per_day=20, periods=2, clusters=8, partners=10, seed=5)
    assert (again.classes == model.classes).all() and np.array_equal(again.p_bar, model.p_bar)
    a = sglt.SGLTSynthesizer(model).sample_set(30, 3, np.random.default_rng([9, 1, 1]))
    b = sglt.SGLTSynthesizer(model).sample_set(30, 3, np.random.default_rng([9, 1, 1]))
    c = sglt.SGLTSynthesizer(model).sample_set(30, 3, np.random.default_rng([9, 1, 2]))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_bad_options_are_clear_errors(model):
    """The options are checked once, against the method's schema, on the way to the synthesizer."""
    with pytest.raises(ValueError, match=r"options.par_c = 1.5: expected a number in \[0, 1\]"):
        make_synthesizer(model, par_c=1.5)
    with pytest.raises(ValueError, match=r"options.par_v = 0.5: expected a number in \[1, "):
        make_synthesizer(model, par_v=0.5)
    with pytest.raises(ValueError, match=r"options.theta = 3: expected an option of the sglt synthesizer \(k, "):
        make_synthesizer(model, theta=3)
    with pytest.raises(ValueError, match=r"options.k = 0: expected an integer in \[1, 50\]"):
        make_synthesizer(model, k=0)
    assert make_synthesizer(model, par_c=1.0, k=3).options()["k"] == 3


def test_kappa_is_chosen_by_the_clustering_objective():
    traces = CityModel(GRID, seed=2).simulate(60, 4, seed=3)
    m = sglt.train(traces, GRID, slots_per_day=20, periods=2, partners=10, seed=5)           # clusters="auto"
    tried = m.params["clusters_tried"]
    assert set(tried) == {str(k) for k in sglt.KAPPA_CANDIDATES} and m.params["clusters"] == int(max(tried, key=tried.get))
    assert m.n_classes == m.params["clusters"]
    # The objective: a clustering along the graph's blocks beats a random one.
    G = np.kron(np.eye(3), np.ones((4, 4))) + 0.01
    visited = np.ones(12, bool)
    assert sglt.clustering_quality(G, visited, np.repeat(np.arange(3), 4)) > 50
    assert sglt.clustering_quality(G, visited, np.tile(np.arange(3), 4)) < 1
    assert sglt.choose_kappa(G, visited, 0, candidates=(2, 3, 6))[0] == 3
    with pytest.raises(ValueError, match="clusters must be an integer >= 1 or 'auto'"):
        sglt.train(traces, GRID, clusters="many")
