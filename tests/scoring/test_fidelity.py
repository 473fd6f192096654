"""Fidelity of the attacks on the 2019 Osaka practice data (issue 3, item 5; the parts involving attacks).

Tolerances, and why:
- s_I of one attack run moves in steps of 1/2000 = 0.0005 (one user); exact
  float ties (pseudonyms with no event in the window, identical counts) are
  broken by a different rule than the 2019 program's summation order, which
  moves a handful of users: 0.002 (4 users) for comparisons with the official
  etables.
- The 2019 sampled mode is random: over seeds its s_I on the conformance set
  spans 0.9705..0.98 (6 seeds); comparisons with it use each seed, or a mean.
- "Beats" between two attacks allows 0.005 (10 users): on anonymizers that
  destroy the signal (A5-YA(1), 16 x 16 blocks) both attacks are at chance,
  s_I ~ 0.999-1, and which is a few users ahead is noise.
- s_T of a trace inference mixes re-identification with random member and
  deletion draws; its spread over seeds is ~0.001; comparisons allow 0.005.
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from scoring import io as sio
from scoring import scores
from scoring.algorithms import attacks as at
from scoring.algorithms import get
from scoring.grid import Grid
from scoring.pseudonymize import pseudonymize

TIE_TOL = 0.002
BEAT_TOL = 0.005
S_T_TOL = 0.005


@pytest.fixture(scope="module")
def osaka(pwscup2019):
    grid = Grid.from_info_region(pwscup2019 / "osaka" / "info_region.csv")
    ref = sio.read_traces(pwscup2019 / "osaka" / "reftraces_team001_data01_IDP.csv", grid)
    org = sio.read_traces(pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv", grid)
    return grid, ref, org


@pytest.fixture(scope="module")
def conformance(pwscup2019, osaka):
    grid, _, _ = osaka
    att = pwscup2019 / "conformance" / "attacks"
    pub = sio.read_pubtraces(att / "pubtraces_team001_data01_IDP.csv", grid)
    _, users = sio.read_ptable(att / "ptable_team001_data01_IDP.csv")
    expected = {}
    with open(pwscup2019 / "conformance" / "expected.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] in ("reidentification", "trace_inference"):
                name = row["submission"].rsplit("_", 1)[-1].removesuffix(".csv")
                expected[name] = float(row["expected"])
    return pub, users, expected


def s_i(users, etable) -> float:
    return scores.reidentification(users, etable)


@pytest.fixture(scope="module")
def i2_exact(osaka, conformance):
    """s_I of exact I2 on the conformance pubtraces (shared: several tests compare against it)."""
    grid, ref, _ = osaka
    pub, users, _ = conformance
    return s_i(users, get("I2-VisitProb").run(grid, ref, pub, seed=0))


def test_exact_i2_reidentifies_at_least_as_many_users_as_the_2019_sampled_mode(osaka, conformance, i2_exact):
    grid, ref, _ = osaka
    pub, users, expected = conformance
    exact = i2_exact
    sampled = [s_i(users, get("I2-VisitProb").run(grid, ref, pub, seed=s, sample_2019=True)) for s in range(3)]
    assert exact <= expected["I2-VisitProb"]  # official sampled etable: 0.9725
    assert all(exact <= v for v in sampled)
    # The sampled mode reproduces the official program's strength (one run's spread is ~0.004).
    assert abs(np.mean(sampled) - expected["I2-VisitProb"]) < 0.006


def test_exact_modes_against_the_official_etables(osaka, conformance, i2_exact):
    grid, ref, _ = osaka
    pub, users, expected = conformance
    i2 = i2_exact
    i3 = s_i(users, get("I3-HomeProb").run(grid, ref, pub, seed=0))
    assert i2 <= expected["I2-VisitProb"] + TIE_TOL  # 0.961 here vs 0.9725
    assert i3 <= expected["I3-HomeProb"] + TIE_TOL  # 0.944 vs 0.944
    # The 2019 I3 used every 8:00-8:59 event, so exact I3 is the official one up to ties.
    assert abs(i3 - expected["I3-HomeProb"]) <= TIE_TOL


def test_i3_agrees_with_the_official_program_pseudonym_by_pseudonym(pwscup2019, osaka, conformance):
    grid, ref, _ = osaka
    pub, users, _ = conformance
    official = sio.read_etable(pwscup2019 / "conformance" / "attacks" / "etable_I3-HomeProb.csv",
                               len(users), len(users))
    ours = get("I3-HomeProb").run(grid, ref, pub, seed=0)
    differ = np.flatnonzero(ours != official)
    # Every disagreement is a tie: the official user's log-likelihood equals our best to 1e-12.
    P = at.visit_probabilities(ref, grid.M, at.slot_mask(ref.time_ids, 20, [0, 1]))
    ll = at.log_likelihood(P, pub, at.slot_mask(pub.time_ids, 20, [0, 1]))
    index = {u: i for i, u in enumerate(ref.user_ids)}
    official_ll = ll[differ, [index[u] for u in official[differ]]]
    np.testing.assert_allclose(official_ll, ll[differ].max(axis=1), rtol=1e-12, atol=1e-12)
    assert len(differ) < 0.05 * len(users)


def test_t2_t3_against_the_official_etraces(osaka, conformance):
    grid, ref, org = osaka
    pub, _, expected = conformance
    t2 = scores.trace_inference(grid, org, get("T2-VisitProb").run(grid, ref, pub, seed=0))
    t2_2019 = scores.trace_inference(grid, org, get("T2-VisitProb").run(grid, ref, pub, seed=0, sample_2019=True))
    t3 = scores.trace_inference(grid, org, get("T3-HomeProb").run(grid, ref, pub, seed=0))
    assert t2 <= expected["T2-VisitProb"] + S_T_TOL  # exact re-identification is stronger: 0.902 vs 0.9247
    assert abs(t2_2019 - expected["T2-VisitProb"]) <= S_T_TOL  # the sampled mode is the official one
    assert abs(t3 - expected["T3-HomeProb"]) <= S_T_TOL  # 0.901 vs 0.8994


def test_t2_t3_shape_and_event_rules_on_osaka(osaka, conformance):
    grid, ref, org = osaka
    pub, _, _ = conformance
    M = grid.M
    ll = at.log_likelihood(at.visit_probabilities(ref, M), pub)
    user_of = at.greedy_unique_argmax(ll)
    assert len(np.unique(user_of)) == pub.m
    est = get("T2-VisitProb").run(grid, ref, pub, seed=5)
    assert est.regions.shape == org.regions.shape
    np.testing.assert_array_equal(est.user_ids, org.user_ids)
    np.testing.assert_array_equal(est.time_ids, org.time_ids)
    ev = np.empty_like(pub.events)
    ev[user_of] = pub.events  # each user's row holds its matched pseudonym's events
    single = ev < M
    np.testing.assert_array_equal(est.regions[single], ev[single])
    gen = ev > M
    starts, stops = pub.sets.indptr[ev[gen]], pub.sets.indptr[ev[gen] + 1]
    chosen = est.regions[gen]
    # Members are sorted: the chosen region lies in its set.
    for lo, hi, r in zip(starts[:2000], stops[:2000], chosen[:2000]):
        assert r in pub.sets.members[lo:hi]
    assert ((est.regions >= 0) & (est.regions < M)).all()
    t3 = get("T3-HomeProb").run(grid, ref, pub, seed=5)
    assert t3.regions.shape == org.regions.shape


SAMPLE_ANONYMIZERS = [
    ("A1-none", {}),
    ("A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
    ("A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.2}),
    ("A2-MRLH", {"mu_x": 0, "mu_y": 0, "lambda": 0.5}),
    ("A3-kRR", {"eps": 8.0}),
    ("A4-PL", {"l": 4.0, "r": 1.0}),
    ("A5-YA", {"p": 0.5}),
    ("A5-YA", {"p": 1.0}),
    ("A6-kmeans", {}),
]


@pytest.mark.parametrize("name, params", SAMPLE_ANONYMIZERS,
                         ids=[f"{n}-{'-'.join(map(str, p.values()))}" for n, p in SAMPLE_ANONYMIZERS])
def test_fuzzy_tfidf_beats_i2_on_every_sample_anonymizer(osaka, name, params):
    grid, ref, org = osaka
    anon = get(name).run(grid, org, seed=7, **params)
    pseudo = pseudonymize(anon, seed=8)
    i2 = s_i(pseudo.user_ids, get("I2-VisitProb").run(grid, ref, pseudo.pubtraces, seed=0))
    i4 = s_i(pseudo.user_ids, get("I4-FuzzyTFIDF").run(grid, ref, pseudo.pubtraces, seed=0))
    assert i4 <= i2 + BEAT_TOL, (name, params, i4, i2)


def test_fuzzy_tfidf_beats_i2_on_the_conformance_pubtraces(osaka, conformance, i2_exact):
    grid, ref, _ = osaka
    pub, users, _ = conformance
    i2 = i2_exact
    i4 = s_i(users, get("I4-FuzzyTFIDF").run(grid, ref, pub, seed=0))
    assert i4 < i2  # 0.937 vs 0.961 on A2-MRLH(1,1,0.5)


def test_one_to_one_matching_helps_i2(osaka, conformance, i2_exact):
    grid, ref, _ = osaka
    pub, users, _ = conformance
    i2 = i2_exact
    i5 = s_i(users, get("I5-Matching").run(grid, ref, pub, seed=0))
    assert i5 <= i2 + BEAT_TOL


def test_refinement_beats_a_uniform_member_on_generalized_events(osaka):
    # MRLH(1,1,0): every event a 2 x 2 block, no deletion. T6 with the fuzzy matching and T7 share the
    # re-identification; they differ only in the member chosen: uniform (T6) or refined (T7).
    grid, ref, org = osaka
    pseudo = pseudonymize(get("A2-MRLH").run(grid, org, seed=3, mu_x=1, mu_y=1, **{"lambda": 0.0}), seed=4)
    uniform = scores.trace_inference(grid, org, get("T6-Matching").run(grid, ref, pseudo.pubtraces, seed=0,
                                                                        score="fuzzy"))
    refined = scores.trace_inference(grid, org, get("T7-Refinement").run(grid, ref, pseudo.pubtraces, seed=0))
    assert refined < uniform - 0.003  # 0.801 vs 0.811 here


def test_stronger_trace_attacks_beat_t2_on_the_conformance_pubtraces(osaka, conformance):
    grid, ref, org = osaka
    pub, _, _ = conformance
    t2 = scores.trace_inference(grid, org, get("T2-VisitProb").run(grid, ref, pub, seed=0))
    for name in ("T4-FrequentRegion", "T5-ReferenceReplay", "T7-Refinement"):
        value = scores.trace_inference(grid, org, get(name).run(grid, ref, pub, seed=0))
        assert value < t2, (name, value, t2)
