"""PPMTF training (synth/ppmtf.py): tensors, hyper-parameter draws, row updates, the sampler.

Sizes are small (CI); tolerances are stated at each check.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

from scoring.traces import Traces
from synth import ppmtf
from synth.ppmtf import (
    HyperPrior,
    PPMTFModel,
    TrainingTensors,
    build_tensors,
    draw_hyper,
    hyper_posterior,
    reconstruction_rmse,
    train,
)


def random_traces(N=60, days=3, T=8, M=64, seed=0) -> Traces:
    """Users with a personal favourite set of regions (so there is structure to learn)."""
    rng = np.random.default_rng(seed)
    fav = rng.integers(0, M, size=(N, 4))
    pick = rng.integers(0, 4, size=(N, days * T))
    reg = np.take_along_axis(fav, pick, axis=1)
    noise = rng.random(reg.shape) < 0.2
    reg[noise] = rng.integers(0, M, size=noise.sum())
    return Traces(np.arange(1, N + 1), np.arange(1, days * T + 1), reg.astype(np.int32))


# --------------------------------------------------------------------------- tensors
def test_tensor_values_by_hand():
    # One user, T=4, two days: day 1 regions 0,1,1,2 ; day 2 regions 2,2,2,2.
    reg = np.array([[0, 1, 1, 2, 2, 2, 2, 2]], dtype=np.int32)
    tr = Traces(np.array([1]), np.arange(1, 9), reg)
    t = build_tensors(tr, M=3, slots_per_day=4, zero_num=0, rng=np.random.default_rng(0))
    u, i, j, v = t.cells("trans")
    got = {(int(a), int(b)): float(c) for a, b, c in zip(i, j, v)}
    # Day 1: 0->1, 1->1, 1->2; day 2: 2->2 three times. No 2->2 across the day boundary (t=4 -> 5).
    assert got == {(0, 1): 1.0, (1, 1): 1.0, (1, 2): 1.0, (2, 2): 3.0}
    u, i, s, v = t.cells("visit")
    got = {(int(a), int(b)): float(c) for a, b, c in zip(i, s, v)}
    assert got == {(0, 0): 1.0, (2, 0): 1.0, (1, 1): 1.0, (2, 1): 1.0, (1, 2): 1.0, (2, 2): 1.0,
                   (2, 3): 2.0}
    assert t.trans_support.tolist() == [0 * 3 + 1, 1 * 3 + 1, 1 * 3 + 2, 2 * 3 + 2]
    assert t.visit_support.sum() == 7


def test_counts_clipped_at_10():
    reg = np.zeros((1, 4 * 15), dtype=np.int32)             # 15 days at region 0
    t = build_tensors(Traces(np.array([1]), np.arange(1, 61), reg), M=2, slots_per_day=4,
                      zero_num=0, rng=np.random.default_rng(0))
    assert t.value.max() == 10.0
    assert set(t.cells("visit")[3].tolist()) == {10.0}


def test_trimming_caps_zeros_and_determinism():
    tr = random_traces(N=40, days=3, T=8, M=64)
    t = build_tensors(tr, M=64, slots_per_day=8, max_trans=10, max_visit=12, zero_num=50,
                      rng=np.random.default_rng(1))
    for name, cap, cells in (("trans", 10, 64 * 64), ("visit", 12, 64 * 8)):
        u, i, j, v = t.cells(name)
        nz = v > 0
        assert np.all((v[nz] >= 1) & (v[nz] <= 10) & (v[nz] == np.round(v[nz])))
        assert np.bincount(u[nz], minlength=40).max() <= cap
        assert np.bincount(u[~nz], minlength=40).tolist() == [50] * 40
        keys = (u.astype(np.int64) * 64 + i) * (cells // 64) + j
        assert len(np.unique(keys)) == len(keys)        # zeros distinct and disjoint from non-zeros
        untrimmed = build_tensors(tr, M=64, slots_per_day=8, max_trans=-1, max_visit=-1, zero_num=0,
                                  rng=np.random.default_rng(1)).cells(name)
        counted = (untrimmed[0].astype(np.int64) * 64 + untrimmed[1]) * (cells // 64) + untrimmed[2]
        assert not np.isin(keys[~nz], counted).any()     # a trimmed cell is never a zero
        assert len(counted) > nz.sum()                   # the caps did bind
    again = build_tensors(tr, M=64, slots_per_day=8, max_trans=10, max_visit=12, zero_num=50,
                          rng=np.random.default_rng(1))
    assert np.array_equal(t.value, again.value) and np.array_equal(t.third, again.third)


def test_zeros_take_every_unobserved_cell_when_few():
    tr = random_traces(N=5, days=1, T=4, M=4)
    t = build_tensors(tr, M=4, slots_per_day=4, zero_num=1000, rng=np.random.default_rng(0))
    for name, per_user in (("trans", 16), ("visit", 16)):
        u = t.cells(name)[0]
        assert np.bincount(u, minlength=5).tolist() == [per_user] * 5   # every cell observed or zero
    t_all = build_tensors(tr, M=4, slots_per_day=4, zero_num=-1, rng=np.random.default_rng(0))
    assert t_all.E == t.E


def test_zero_sampling_is_uniform():
    # 1 user, 100 cells, 10 observed, 30 zeros: each unobserved cell is picked with prob 30/90.
    nz = np.arange(10, dtype=np.int64) * 7
    hits = np.zeros(100)
    rng = np.random.default_rng(0)
    for _ in range(600):
        _, c = ppmtf._sample_zeros(nz, 1, 100, 30, rng)
        assert len(c) == 30 and not np.isin(c, nz).any()
        hits[c] += 1
    free = np.setdiff1d(np.arange(100), nz)
    p = hits[free] / 600
    # Binomial sd = sqrt(1/3 * 2/3 / 600) = 0.019; 5 sd bound.
    assert np.abs(p - 1 / 3).max() < 0.1


def test_bad_region_rejected():
    tr = Traces(np.array([1]), np.arange(1, 5), np.array([[0, 1, 9, 2]], dtype=np.int32))
    with pytest.raises(ValueError, match="region index 9 is outside 0..3"):
        build_tensors(tr, M=4, slots_per_day=4)


# --------------------------------------------------------------------------- hyper-parameters
def test_hyper_posterior_uses_uncentred_scatter():
    rng = np.random.default_rng(0)
    X = rng.random((50, 3)) + 1.0
    W, nu, mean, beta = hyper_posterior(X)
    n, xbar = 50, X.mean(0)
    S = X.T @ X / n                                            # PPMTF.md 2.6: uncentred
    expect = np.linalg.inv(np.eye(3) + n * S + (2 * n / (2 + n)) * np.outer(xbar, xbar))
    np.testing.assert_allclose(W, expect, rtol=1e-12)
    assert nu == 3 + 50 and beta == 52
    np.testing.assert_allclose(mean, n * xbar / 52, rtol=1e-12)
    Wc, *_ = hyper_posterior(X, centered_scatter=True)
    Sc = np.cov(X.T, bias=True)
    np.testing.assert_allclose(Wc, np.linalg.inv(np.eye(3) + n * Sc + (2 * n / 52) * np.outer(xbar, xbar)),
                               rtol=1e-12)
    assert not np.allclose(W, Wc)


def test_hyper_draw_moments():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3)) * 0.5 + 0.3
    W, nu, mean, beta = hyper_posterior(X, HyperPrior())
    draws = [draw_hyper(X, rng) for _ in range(4000)]
    Lam = np.mean([d[1] for d in draws], axis=0)
    mu = np.mean([d[0] for d in draws], axis=0)
    # E[Lambda] = nu* W*; relative tolerance 5% (Wishart sd/mean ~ 1/sqrt(nu)=0.18, / sqrt(4000)).
    np.testing.assert_allclose(Lam, nu * W, rtol=0.05, atol=0.05 * np.abs(nu * W).max())
    # E[mu] = n xbar/(beta0 + n); its sd per component is small (~0.04 / sqrt(4000)).
    np.testing.assert_allclose(mu, mean, atol=0.01)
    assert all(np.all(np.linalg.eigvalsh(d[1]) > 0) for d in draws[:50])


# --------------------------------------------------------------------------- row updates
def test_gram_matches_brute_force_with_split_groups(monkeypatch):
    monkeypatch.setattr(ppmtf, "_PIECE", 7)                   # force groups to be split in pieces
    monkeypatch.setattr(ppmtf, "_BLOCK_CELLS", 40)
    rng = np.random.default_rng(0)
    E, G, K, rows = 500, 9, 4, 30
    group = rng.integers(0, G, E)
    group[group == 3] = 4                                   # an empty group
    r1, r2 = rng.integers(0, rows, E), rng.integers(0, rows, E)
    val = rng.random(E)
    Z = np.vstack([rng.random((rows, K)), np.zeros((1, K))])
    grouping = ppmtf._make_grouping(group, r1, r2, val, G, dummy=rows)
    Gm, h = ppmtf._gram(grouping, Z, K)
    F = Z[r1] * Z[r2]
    for g in range(G):
        sel = group == g
        np.testing.assert_allclose(Gm[g], F[sel].T @ F[sel], atol=1e-12)
        np.testing.assert_allclose(h[g], F[sel].T @ val[sel], atol=1e-12)


def test_row_posterior_moments():
    rng = np.random.default_rng(2)
    K = 3
    A = rng.random((5, K))
    G = A.T @ A
    h = rng.random(K)
    mu, Lam = rng.random(K), np.eye(K) * 2.0
    n = 20000
    x = ppmtf._sample_rows(np.broadcast_to(G, (n, K, K)), np.broadcast_to(h, (n, K)),
                           np.broadcast_to(mu, (n, K)), np.broadcast_to(Lam, (n, K, K)), 3.0, rng)
    P = Lam + 3.0 * G
    mean = np.linalg.solve(P, 3.0 * h + Lam @ mu)
    cov = np.linalg.inv(P)
    # Monte Carlo: mean within ~5 standard errors; covariance within 5% of its largest entry.
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05 * np.abs(cov).max())


def test_planted_low_rank_recovery():
    # Dense Omega with exact low-rank values and a large alpha: the final sample must reproduce them.
    rng = np.random.default_rng(3)
    N, M, T, K = 30, 8, 5, 3
    A, B, C, D = rng.random((N, K)), rng.random((M, K)), rng.random((M, K)), rng.random((T, K))
    n, i, j = np.meshgrid(np.arange(N), np.arange(M), np.arange(M), indexing="ij")
    n2, i2, t2 = np.meshgrid(np.arange(N), np.arange(M), np.arange(T), indexing="ij")
    rt = np.einsum("nk,ik,jk->nij", A, B, C).ravel()
    rv = np.einsum("nk,ik,tk->nit", A, B, D).ravel()
    tens = TrainingTensors(
        N=N, M=M, T=T, user=np.concatenate([n.ravel(), n2.ravel()]).astype(np.int32),
        first=np.concatenate([i.ravel(), i2.ravel()]).astype(np.int32),
        third=np.concatenate([j.ravel(), t2.ravel()]).astype(np.int32),
        value=np.concatenate([rt, rv]), n_trans=rt.size,
        trans_support=np.arange(M * M), visit_support=np.ones((T, M), bool))
    model = train(None, M, 1, slots_per_day=T, K=K, alpha=1e4, sweeps=60, seed=0, tensors=tens)
    rmse = reconstruction_rmse(model, tens)
    scale = np.sqrt(np.mean(np.concatenate([rt, rv]) ** 2))
    # Noise sd is alpha^-1/2 = 0.01; allow 3x that (relative to values of size ~0.75).
    assert rmse["trans_nonzero"] < 0.03 and rmse["visit_nonzero"] < 0.03, (rmse, scale)


# --------------------------------------------------------------------------- training + model file
@pytest.fixture(scope="module")
def small_model():
    tr = random_traces(N=60, days=3, T=8, M=64)
    calls = []
    model = train(tr, 8, 8, slots_per_day=8, K=4, sweeps=5, zero_num=100, seed=7,
                  progress=lambda d, t, m: calls.append((d, t)))
    return tr, model, calls


def test_shapes_progress_and_determinism(small_model):
    tr, model, calls = small_model
    assert model.A.shape == (60, 4) and model.B.shape == (64, 4) and model.C.shape == (64, 4)
    assert model.D.shape == (8, 4) and model.mu_A.shape == (4,) and model.Lambda_A.shape == (4, 4)
    np.testing.assert_allclose(model.Lambda_A, model.Lambda_A.T)
    assert np.all(np.linalg.eigvalsh(model.Lambda_A) > 0)
    assert calls[-1] == (5, 5) and [d for d, _ in calls[1:]] == [1, 2, 3, 4, 5]
    again = train(tr, 8, 8, slots_per_day=8, K=4, sweeps=5, zero_num=100, seed=7)
    assert np.array_equal(model.A, again.A) and np.array_equal(model.D, again.D)
    assert model.slot_minutes == 75.0 and model.slot_start_minute == 480.0   # 8 slots over 8:00-18:00


def test_model_file_round_trip(small_model, tmp_path):
    _, model, _ = small_model
    buf = io.BytesIO()
    model.save(buf)
    back = PPMTFModel.load(buf.getvalue())
    for name in ("A", "B", "C", "D", "mu_A", "Lambda_A", "trans_support", "visit_support"):
        assert np.array_equal(getattr(model, name), getattr(back, name)), name
    assert (back.nx, back.ny, back.T, back.params["K"]) == (8, 8, 8, 4)
    bad = tmp_path / "bad.npz"
    np.savez(bad, A=np.zeros(2))
    with pytest.raises(ValueError, match="not a PPMTF model file"):
        PPMTFModel.load(bad)
