"""PPMTF training: Bayesian multiple tensor factorization by Gibbs sampling.

Implements ``../shared/PPMTF.md`` sections 1 and 2 (the training code shared by
the public ``PPMTF/PPMTF`` and ``PPMTFPlus/PPMTFPlus`` repositories), vectorised
for numpy:

- two count tensors per training user: transitions R^I (N x M x M) between
  consecutive time slots of the same day, and visits R^II (N x M x T) per slot
  of the day; each user's distinct non-zero cells are trimmed to a cap, counts
  are clipped at 10, and ``zero_num`` unobserved cells per user and tensor are
  sampled once as explicit zeros;
- the factorisation r^I_nij ~ sum_k A_nk B_ik C_jk, r^II_nit ~ sum_k A_nk B_ik D_tk
  with Gaussian noise of precision ``alpha`` and BPMF (Normal-Wishart)
  hyper-priors on the rows of every factor;
- a Gibbs sweep in the reference order (hyper-parameters from the previous
  factors, then A, B, C and D); the model is the final sample.

Vectorisation: every observed cell is stored once (int32 indices, float64
value). For each of the three groupings (by user; by first region; by next
region or slot) the cells are sorted once, cut into pieces of at most
``_PIECE`` cells, and pieces of similar length are padded into dense
``(g, L)`` index blocks, so each sweep's Gram matrices are batched matmuls
(BLAS) and the row posteriors a batched Cholesky.

Time ids of a training file map to slots of the day by ``slots_per_day``:
``slot = (time_id - 1) % S`` and ``day = (time_id - 1) // S``; a transition is
counted between time ids ``t`` and ``t + 1`` of the same user on the same day
(PPMTF.md 1.2: the instant index increases by exactly 1). For the 2019
people-flow sample (35 time ids per user) use ``slots_per_day=35``.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces
from synth.common import ModelFrame, Progress, grid_of, no_progress
from synth.common import grid_box as grid_box_of

MODEL_VERSION = "tracecup-ppmtf-1"

#: Counts are clipped at this value before training (PPMTF.md 1.5).
RATING_CLIP = 10
#: Longest piece of one group in a padded block (bounds the padding waste).
_PIECE = 1024
#: Cells per padded block (bounds the memory of one gathered feature block).
_BLOCK_CELLS = 1 << 17

# ---------------------------------------------------------------------------
# Training tensors
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainingTensors:
    """The observed cells of R^I and R^II after trimming, clipping and zero sampling.

    Cells of the transition tensor come first (``n_trans`` of them), then the
    visit cells. For a transition cell ``third`` is the next region ``j``
    (0..M-1); for a visit cell it is the slot ``t`` (0..T-1).

    Attributes:
        N, M, T: users, regions, slots of the day.
        user: (E,) int32 training user index 0..N-1.
        first: (E,) int32 region index of the first mode (from / visited region).
        third: (E,) int32 next region (transitions) or slot (visits).
        value: (E,) float64 clipped count in [1, 10], or 0 for a sampled zero.
        n_trans: number of transition cells (the first ``n_trans`` entries).
        trans_support: (n_t,) int64 sorted keys ``i*M + j`` of every transition
            seen in training (before trimming): the ReadTrans support.
        visit_support: (T, M) bool, True where some training user visited
            region i in slot t (before trimming): the ReadVisit support.
    """

    N: int
    M: int
    T: int
    user: np.ndarray
    first: np.ndarray
    third: np.ndarray
    value: np.ndarray
    n_trans: int
    trans_support: np.ndarray
    visit_support: np.ndarray

    @property
    def E(self) -> int:
        return len(self.value)

    def cells(self, tensor: str):
        """(user, first, third, value) of one tensor, ``"trans"`` or ``"visit"``."""
        s = slice(0, self.n_trans) if tensor == "trans" else slice(self.n_trans, self.E)
        return self.user[s], self.first[s], self.third[s], self.value[s]


def _trim(user: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean keep-mask over cells so that each user keeps at most ``cap`` distinct cells.

    Cells to delete are chosen uniformly at random per user (PPMTF.md 1.4):
    every cell gets a random key, cells are ranked by key within their user,
    and the first ``cap`` are kept. ``cap < 0`` keeps everything.
    """
    n = len(user)
    if cap < 0 or n == 0:
        return np.ones(n, dtype=bool)
    order = np.lexsort((rng.random(n), user))
    u_sorted = user[order]
    starts = np.searchsorted(u_sorted, u_sorted, side="left")
    rank = np.arange(n) - starts
    keep = np.empty(n, dtype=bool)
    keep[order] = rank < cap
    return keep


def _sample_zeros(nz_keys: np.ndarray, N: int, cells: int, zero_num: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per user, ``min(zero_num, #unobserved)`` distinct unobserved cells, uniformly.

    Args:
        nz_keys: sorted int64 keys ``user * cells + cell`` of the non-zero cells.
        N: users; cells: cells per user (M*M or M*T); zero_num: zeros per user
            (-1 = every unobserved cell).

    Returns:
        (users (Z,) int64, cells (Z,) int64) of the sampled zeros, user-major.

    Draws random cells with replacement, drops observed cells and repeats,
    and keeps the first ``zero_num`` distinct ones in draw order: the first
    k distinct draws of a uniform sequence are a uniform k-subset. Users whose
    quota is at least half their unobserved cells take an exact random
    permutation of all of them instead, so the rejection loop stays short.
    """
    nnz = np.bincount(nz_keys // cells, minlength=N)
    unobserved = cells - nnz
    need = unobserved if zero_num < 0 else np.minimum(zero_num, unobserved)
    exact = need * 2 >= unobserved
    out_u, out_c = [], []
    # Exact users: enumerate their unobserved cells (small: needs >= half of them).
    for u in np.flatnonzero(exact & (need > 0)):
        lo, hi = np.searchsorted(nz_keys, [u * cells, (u + 1) * cells])
        free = np.setdiff1d(np.arange(cells, dtype=np.int64), nz_keys[lo:hi] - u * cells,
                            assume_unique=True)
        pick = free[rng.permutation(len(free))[:need[u]]]
        out_u.append(np.full(len(pick), u, dtype=np.int64))
        out_c.append(pick)
    todo = np.flatnonzero(~exact & (need > 0))
    while len(todo):
        k = int(need[todo].max())
        width = int(k * 1.25) + 16
        cand = rng.integers(0, cells, size=(len(todo), width), dtype=np.int64)
        keys = todo[:, None] * cells + cand
        pos = np.searchsorted(nz_keys, keys)
        pos[pos == len(nz_keys)] = 0
        observed = nz_keys[pos] == keys if len(nz_keys) else np.zeros(keys.shape, bool)
        # First occurrence of each key within its row, in draw order.
        order = np.argsort(cand, axis=1, kind="stable")
        sc = np.take_along_axis(cand, order, axis=1)
        dup_sorted = np.zeros(sc.shape, dtype=bool)
        dup_sorted[:, 1:] = sc[:, 1:] == sc[:, :-1]
        dup = np.empty_like(dup_sorted)
        np.put_along_axis(dup, order, dup_sorted, axis=1)
        valid = ~observed & ~dup
        rank = np.cumsum(valid, axis=1)
        take = valid & (rank <= need[todo][:, None])
        done = rank[:, -1] >= need[todo]
        rows, cols = np.nonzero(take & done[:, None])
        out_u.append(todo[rows])
        out_c.append(cand[rows, cols])
        todo = todo[~done]
    if not out_u:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    users = np.concatenate(out_u)
    cellv = np.concatenate(out_c)
    order = np.lexsort((cellv, users))
    return users[order], cellv[order]


def _counted_cells(reg: np.ndarray, tid: np.ndarray, M: int, T: int) -> tuple[np.ndarray, ...]:
    """The non-zero cells of R^II and R^I as sorted keys and counts: visits, one per event at (user,
    region, slot), key ``(u * M + region) * T + slot``; transitions between consecutive time ids of one
    day, key ``(u * M + from) * M + to``. ``reg``: (N, L) 0-based regions, negative = no event; ``tid``:
    (L,) time ids from 1. Returns (visit keys, visit counts, transition keys, transition counts)."""
    if len(tid) and tid.min() < 1:
        raise ValueError(f"time ids must be >= 1, got {tid.min()}")
    valid = reg >= 0
    if np.any(reg[valid] >= M):
        bad = int(reg[valid].max())
        raise ValueError(f"region index {bad} is outside 0..{M - 1} (grid has {M} regions)")
    slot = (tid - 1) % T
    day = (tid - 1) // T
    uu, cc = np.nonzero(valid)
    vkeys, vcount = np.unique((uu.astype(np.int64) * M + reg[uu, cc]) * T + slot[cc], return_counts=True)
    nxt = np.flatnonzero((tid[1:] == tid[:-1] + 1) & (day[1:] == day[:-1]))
    if len(nxt):
        src, dst = reg[:, nxt], reg[:, nxt + 1]
        ok = (src >= 0) & (dst >= 0)
        tu = np.broadcast_to(np.arange(reg.shape[0])[:, None], src.shape)[ok].astype(np.int64)
        tkeys = (tu * M + src[ok]) * M + dst[ok]
    else:
        tkeys = np.zeros(0, np.int64)
    tkeys, tcount = np.unique(tkeys, return_counts=True)
    return vkeys, vcount, tkeys, tcount


def _cells(keys: np.ndarray, count: np.ndarray, zu: np.ndarray, zc: np.ndarray, M: int, per: int,
           clip: int) -> tuple[np.ndarray, ...]:
    """Observed cells (``keys``: ``(u * M + i) * per + j``, their counts clipped at ``clip``) and sampled
    zeros (user ``zu``, cell ``zc``) of one tensor, sorted by key: (user, i, j, value) arrays."""
    cell_keys = np.concatenate([keys, zu * (M * per) + zc])
    vals = np.concatenate([np.minimum(count, clip).astype(np.float64), np.zeros(len(zc))])
    order = np.argsort(cell_keys, kind="stable")
    cell_keys, vals = cell_keys[order], vals[order]
    u = cell_keys // (M * per)
    rest = cell_keys % (M * per)
    return u, rest // per, rest % per, vals


def build_tensors(traces: Traces, M: int, slots_per_day: int, *, max_trans: int = 100,
                  max_visit: int = 100, zero_num: int = 1000, clip: int = RATING_CLIP,
                  rng: np.random.Generator | None = None) -> TrainingTensors:
    """Build the observed cells of R^I and R^II from training traces (PPMTF.md section 1).

    Args:
        traces: training traces; ``regions`` (N, L) 0-based, negative = no event.
        M: number of regions of the grid.
        slots_per_day: T; time id -> slot ``(t-1) % T``, day ``(t-1) // T``.
        max_trans, max_visit: caps on distinct non-zero cells per user (-1: none).
        zero_num: sampled zeros per user per tensor (-1: all unobserved cells).
        clip: counts are clipped at this value.
        rng: the generator (trimming, then transition zeros, then visit zeros).
            Zeros are drawn among cells with no count (never a trimmed cell).

    Returns:
        A :class:`TrainingTensors`.
    """
    rng = np.random.default_rng() if rng is None else rng
    T = int(slots_per_day)
    if T < 1:
        raise ValueError(f"slots_per_day must be >= 1, got {slots_per_day}")
    reg = np.asarray(traces.regions)
    N = reg.shape[0]
    tid = np.asarray(traces.time_ids, dtype=np.int64)
    vkeys, vcount, tkeys, tcount = _counted_cells(reg, tid, M, T)

    trans_support = np.unique(tkeys % (M * M))
    visit_support = np.zeros((T, M), dtype=bool)
    vi = (vkeys // T) % M
    visit_support[vkeys % T, vi] = True

    keep_t = _trim(tkeys // (M * M), max_trans, rng)
    keep_v = _trim(vkeys // (M * T), max_visit, rng)
    # Zeros are drawn among cells with no count at all: a cell removed by trimming is
    # unknown, not zero.
    zt_u, zt_c = _sample_zeros(tkeys, N, M * M, zero_num, rng)
    zv_u, zv_c = _sample_zeros(vkeys, N, M * T, zero_num, rng)
    tkeys, tcount = tkeys[keep_t], tcount[keep_t]
    vkeys, vcount = vkeys[keep_v], vcount[keep_v]

    tu, ti, tj, tv = _cells(tkeys, tcount, zt_u, zt_c, M, M, clip)
    vu, vi, vt, vv = _cells(vkeys, vcount, zv_u, zv_c, M, T, clip)
    return TrainingTensors(
        N=N, M=M, T=T,
        user=np.concatenate([tu, vu]).astype(np.int32),
        first=np.concatenate([ti, vi]).astype(np.int32),
        third=np.concatenate([tj, vt]).astype(np.int32),
        value=np.concatenate([tv, vv]),
        n_trans=len(tv), trans_support=trans_support, visit_support=visit_support)


# ---------------------------------------------------------------------------
# Hyper-parameters (PPMTF.md 2.6)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class HyperPrior:
    """Normal-Wishart hyper-prior of a factor's rows: W0 = w0 * I, nu0 (None = K), beta0, mu0 = 0."""

    beta0: float = 2.0
    nu0: float | None = None
    w0: float = 1.0


def hyper_posterior(X: np.ndarray, prior: HyperPrior = HyperPrior(), *,
                    centered_scatter: bool = False) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Posterior parameters (W*, nu*, mean of mu, beta*) of (Lambda, mu) given rows X (n, K).

    ``centered_scatter=False`` reproduces the reference code, which uses the
    uncentred second moment S = X^T X / n; ``True`` is textbook BPMF,
    S = (X - xbar)^T (X - xbar) / n.
    """
    n, K = X.shape
    nu0 = float(K if prior.nu0 is None else prior.nu0)
    xbar = X.mean(axis=0)
    Xc = X - xbar if centered_scatter else X
    S = Xc.T @ Xc / n
    d = -xbar  # mu0 - xbar with mu0 = 0
    Winv = np.eye(K) / prior.w0 + n * S + (prior.beta0 * n / (prior.beta0 + n)) * np.outer(d, d)
    Wstar = np.linalg.inv(Winv)
    Wstar = (Wstar + Wstar.T) / 2
    return Wstar, nu0 + n, n * xbar / (prior.beta0 + n), prior.beta0 + n


def draw_hyper(X: np.ndarray, rng: np.random.Generator, prior: HyperPrior = HyperPrior(), *,
               centered_scatter: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Draw (mu (K,), Lambda (K, K)) from the Normal-Wishart posterior given rows X (n, K).

    Lambda ~ Wishart(df=nu*, scale=W*) (mean nu* W*), then
    mu ~ N((beta0 mu0 + n xbar)/(beta0 + n), ((beta0 + n) Lambda)^-1).
    """
    import scipy.stats  # local: workers and command lines that never train skip its slow import
    Wstar, nu, mean, beta = hyper_posterior(X, prior, centered_scatter=centered_scatter)
    Lam = np.atleast_2d(scipy.stats.wishart.rvs(df=nu, scale=Wstar, random_state=rng))
    Lam = (Lam + Lam.T) / 2
    mu = mean + _solve_chol_t(np.linalg.cholesky(beta * Lam), rng.standard_normal(len(mean)))
    return mu, Lam


def _solve_chol_t(L: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x = L^{-T} z for lower-triangular L (stacks allowed): x has covariance (L L^T)^{-1}."""
    Lt = np.swapaxes(L, -1, -2)
    return np.linalg.solve(Lt, z[..., None])[..., 0]


# ---------------------------------------------------------------------------
# Grouped Gram matrices
# ---------------------------------------------------------------------------
@dataclass
class _Grouping:
    """Cells grouped by one factor's row, cut into padded blocks.

    Each block holds ``g`` pieces of at most ``_PIECE`` cells of one group,
    padded to the block's longest piece with a dummy cell whose features are
    zero. ``rows1``/``rows2`` index the stacked factor matrix ``Z`` (the two
    other factors of the cell); ``values`` is the cell value (0 on pads).
    """

    n_groups: int
    blocks: list = field(default_factory=list)  # (piece_group (g,), rows1 (g,L), rows2 (g,L), values (g,L))


def _make_grouping(group: np.ndarray, rows1: np.ndarray, rows2: np.ndarray, values: np.ndarray,
                   n_groups: int, dummy: int) -> _Grouping:
    order = np.argsort(group, kind="stable")
    g_sorted = group[order]
    starts = np.searchsorted(g_sorted, np.arange(n_groups))
    ends = np.searchsorted(g_sorted, np.arange(n_groups), side="right")
    # Pieces: (group, start, length) with length <= _PIECE.
    lengths = ends - starts
    n_pieces = np.maximum(1, -(-lengths // _PIECE))
    n_pieces[lengths == 0] = 0
    pg = np.repeat(np.arange(n_groups), n_pieces)
    first_piece = np.concatenate([[0], np.cumsum(n_pieces)[:-1]])
    k = np.arange(len(pg)) - np.repeat(first_piece, n_pieces)
    p_start = starts[pg] + k * _PIECE
    p_len = np.minimum(ends[pg] - p_start, _PIECE)
    by_len = np.argsort(-p_len, kind="stable")
    out = _Grouping(n_groups)
    i = 0
    while i < len(by_len):
        Lmax = int(p_len[by_len[i]])
        g = max(1, _BLOCK_CELLS // max(Lmax, 1))
        sel = by_len[i:i + g]
        i += g
        offs = np.arange(Lmax)
        pos = p_start[sel][:, None] + offs[None, :]
        pad = offs[None, :] >= p_len[sel][:, None]
        cell = order[np.where(pad, 0, pos)]
        r1 = np.where(pad, dummy, rows1[cell]).astype(np.int32)
        r2 = np.where(pad, dummy, rows2[cell]).astype(np.int32)
        val = np.where(pad, 0.0, values[cell])
        out.blocks.append((pg[sel], r1, r2, val))
    return out


def _gram(grouping: _Grouping, Z: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group: Gram sum_e f_e f_e^T (G, K, K) and sum_e r_e f_e (G, K), f_e = Z[r1] * Z[r2]."""
    G = np.zeros((grouping.n_groups, K, K))
    h = np.zeros((grouping.n_groups, K))
    for pg, r1, r2, val in grouping.blocks:
        F = Z[r1]
        F *= Z[r2]
        Ft = np.swapaxes(F, 1, 2)
        gram = Ft @ F
        rhs = (Ft @ val[:, :, None])[:, :, 0]
        if len(np.unique(pg)) == len(pg):
            G[pg] += gram
            h[pg] += rhs
        else:
            np.add.at(G, pg, gram)
            np.add.at(h, pg, rhs)
    return G, h


def _sample_rows(G: np.ndarray, h: np.ndarray, mu: np.ndarray, Lam: np.ndarray, alpha: float,
                 rng: np.random.Generator) -> np.ndarray:
    """Draw every row from N(m*, Lambda*^-1) with Lambda* = Lam + alpha G, m* = Lambda*^-1 (alpha h + Lam mu).

    ``mu`` (R, K) and ``Lam`` (R, K, K) may differ per row (C and D are
    sampled in one batch).
    """
    P = Lam + alpha * G
    b = alpha * h + (Lam @ mu[:, :, None])[:, :, 0]
    Lc = np.linalg.cholesky(P)
    mean = np.linalg.solve(P, b[:, :, None])[:, :, 0]
    return mean + _solve_chol_t(Lc, rng.standard_normal(h.shape))


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------
@dataclass
class PPMTFModel(ModelFrame):
    """A trained PPMTF model and what generation needs from training.

    Attributes:
        A: (N, K) training users' factors (kept for PPMTF-vs-PPMTF+ checks;
            never used by PPMTF+ generation).
        B: (M, K) first-mode regions; C: (M, K) next regions; D: (T, K) slots.
        mu_A: (K,) and Lambda_A: (K, K) the user-factor hyper-parameters drawn
            at the start of the final sweep (PPMTF.md 3.1).
        trans_support: (n,) int64 sorted keys ``i*M + j`` of training transitions (ReadTrans).
        visit_support: (T, M) bool, region visited in slot t in training (ReadVisit).
        nx, ny, slot_start_minute, slot_minutes, grid_box: the grid and slot clock
            (:class:`~synth.common.ModelFrame`).
        params: training parameters (alpha, K, sweeps, seed, ...), JSON-serialisable.
        version: model file format version.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    mu_A: np.ndarray
    Lambda_A: np.ndarray
    trans_support: np.ndarray
    visit_support: np.ndarray
    version: str = MODEL_VERSION
    method: ClassVar[str] = "ppmtf"

    @property
    def K(self) -> int:
        return self.B.shape[1]

    def grid(self) -> Grid:
        """The training grid (box and hospitals when known, else the model's shape on the Tokyo box)."""
        if self.grid_box:
            return grid_of(self.grid_box)
        if (self.nx, self.ny) == (32, 32):
            return Grid()
        return Grid(nx=self.nx, ny=self.ny, hospitals=())

    @property
    def M(self) -> int:
        return self.B.shape[0]

    @property
    def T(self) -> int:
        return self.D.shape[0]

    def save(self, dest) -> None:
        """Write the model as a compressed ``.npz`` (path or binary file object)."""
        meta = self.frame_meta()
        np.savez_compressed(dest, A=self.A, B=self.B, C=self.C, D=self.D, mu_A=self.mu_A,
                            Lambda_A=self.Lambda_A, trans_support=self.trans_support,
                            visit_support=self.visit_support,
                            meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8))

    @classmethod
    def load(cls, source) -> PPMTFModel:
        """Read a model written by :meth:`save` (path, bytes or binary file object)."""
        if isinstance(source, (bytes, bytearray)):
            source = io.BytesIO(source)
        with np.load(source, allow_pickle=False) as z:
            try:
                meta = json.loads(z["meta"].tobytes().decode())
                arrays = {k: z[k] for k in ("A", "B", "C", "D", "mu_A", "Lambda_A",
                                            "trans_support", "visit_support")}
            except KeyError as exc:
                raise ValueError(f"not a PPMTF model file: missing {exc}") from None
        if meta.get("version") != MODEL_VERSION:
            raise ValueError(f"model file version {meta.get('version')!r}, expected {MODEL_VERSION!r}")
        model = cls(**arrays, **cls.frame_fields(meta))
        if model.M != model.nx * model.ny:
            raise ValueError(f"model has {model.M} regions but grid {model.nx} x {model.ny}")
        return model


def train(traces: Traces, nx: int | Grid, ny: int | None = None, *, slots_per_day: int = 20, K: int = 16,
          alpha: float = 200.0, sweeps: int = 100, zero_num: int = 1000, max_trans: int = 100,
          max_visit: int = 100, prior: HyperPrior = HyperPrior(), centered_scatter: bool = False,
          slot_start_minute: float = 480.0, slot_minutes: float | None = None,
          seed: int | None = 0, progress: Progress | None = None,
          tensors: TrainingTensors | None = None) -> PPMTFModel:
    """Train PPMTF by Gibbs sampling (PPMTF.md section 2) and return the final sample.

    Args:
        traces: training traces on an ``nx`` x ``ny`` grid (0-based regions).
        nx, ny: the grid shape; or pass a :class:`~scoring.grid.Grid` as ``nx``
            (its box and hospitals are then stored in the model).
        slots_per_day: T, slots of a day in the training time ids.
        K: latent dimension (16: the paper's z for PF/FS; the 2019 contest
            script used 32).
        alpha: noise precision of every observed cell.
        sweeps: Gibbs sweeps (ItrNum).
        zero_num, max_trans, max_visit: see :func:`build_tensors`.
        prior, centered_scatter: hyper-prior and scatter form (PPMTF.md 2.6).
        slot_start_minute, slot_minutes: clock of the model's slots, stored in
            the model for generation (default: T slots over 8:00-18:00).
        seed: seeds trimming, zero sampling, initialisation and the sampler.
        progress: ``progress(done, total, message)`` after every sweep.
        tensors: prebuilt tensors (skips :func:`build_tensors`).

    Returns:
        The :class:`PPMTFModel` of the final sweep.
    """
    progress = progress or no_progress
    grid_box = None
    if isinstance(nx, Grid):
        g = nx
        nx, ny = g.nx, g.ny
        grid_box = grid_box_of(g)
    if ny is None:
        raise ValueError("train needs the grid: a Grid, or nx and ny")
    rng = np.random.default_rng(seed)
    M = nx * ny
    T = int(slots_per_day)
    if tensors is None:
        progress(0, sweeps, "building tensors")
        tensors = build_tensors(traces, M, T, max_trans=max_trans, max_visit=max_visit,
                                zero_num=zero_num, rng=rng)
    N = tensors.N
    if N < 2:
        raise ValueError(f"training needs at least 2 users, got {N}")
    Z, spans, hyper = _gibbs(tensors, K=K, alpha=alpha, sweeps=sweeps, prior=prior,
                             centered_scatter=centered_scatter, rng=rng, progress=progress)
    (oA, oB), (oC, oD), dummy = spans["A"], spans["C"], spans["D"][1]
    mu_A, Lambda_A = hyper["A"]
    params = dict(K=K, alpha=alpha, sweeps=sweeps, zero_num=zero_num, max_trans=max_trans,
                  max_visit=max_visit, beta0=prior.beta0, nu0=prior.nu0, w0=prior.w0,
                  centered_scatter=centered_scatter, seed=seed, slots_per_day=T,
                  training_users=N, rating_clip=RATING_CLIP)
    return PPMTFModel(
        A=Z[oA:oB].copy(), B=Z[oB:oC].copy(), C=Z[oC:oD].copy(), D=Z[oD:dummy].copy(),
        mu_A=np.asarray(mu_A), Lambda_A=np.asarray(Lambda_A),
        trans_support=tensors.trans_support, visit_support=tensors.visit_support,
        nx=nx, ny=ny, slot_start_minute=float(slot_start_minute),
        slot_minutes=float(600.0 / T if slot_minutes is None else slot_minutes), params=params,
        grid_box=grid_box)


def _gibbs(tensors: TrainingTensors, *, K: int, alpha: float, sweeps: int, prior: HyperPrior,
           centered_scatter: bool, rng: np.random.Generator, progress: Progress) -> tuple[np.ndarray, dict, dict]:
    """The Gibbs sampler of :func:`train` (PPMTF.md section 2): ``sweeps`` sweeps, each drawing the four
    factor matrices' hyper-parameters, then A's, B's, and C's and D's rows given the others.

    Returns the stacked factor matrix Z = [A; B; C; D; 0], (N + 2M + T + 1, K), the row span of each
    matrix in it, and the last hyper-parameters ``{name: (mu, Lambda)}``. A cell's three factor rows are
    user, N + first, N + M + third (third < M for transitions; M + t for visits); the last row is zero,
    the padding of the groupings."""
    N, M, T = tensors.N, tensors.M, tensors.T
    oA, oB, oC = 0, N, N + M
    oD = N + 2 * M
    dummy = N + 2 * M + T
    is_visit = np.arange(tensors.E) >= tensors.n_trans
    ra = tensors.user.astype(np.int64) + oA
    rb = tensors.first.astype(np.int64) + oB
    rc = tensors.third.astype(np.int64) + np.where(is_visit, oD, oC)
    val = tensors.value
    by_user = _make_grouping(ra - oA, rb, rc, val, N, dummy)
    by_first = _make_grouping(rb - oB, ra, rc, val, M, dummy)
    by_third = _make_grouping(rc - oC, ra, rb, val, M + T, dummy)

    Z = np.zeros((dummy + 1, K))
    Z[:dummy] = rng.random((dummy, K))
    spans = {"A": (oA, oB), "B": (oB, oC), "C": (oC, oD), "D": (oD, dummy)}
    hyper = {}
    for sweep in range(1, sweeps + 1):
        for name in ("A", "B", "C", "D"):
            lo, hi = spans[name]
            hyper[name] = draw_hyper(Z[lo:hi], rng, prior, centered_scatter=centered_scatter)
        for grouping, rows in ((by_user, [("A", N)]), (by_first, [("B", M)]), (by_third, [("C", M), ("D", T)])):
            G, h = _gram(grouping, Z, K)
            mu = np.concatenate([np.broadcast_to(hyper[x][0], (n, K)) for x, n in rows])
            Lam = np.concatenate([np.broadcast_to(hyper[x][1], (n, K, K)) for x, n in rows])
            lo = spans[rows[0][0]][0]
            Z[lo:lo + len(G)] = _sample_rows(G, h, mu, Lam, alpha, rng)
        progress(sweep, sweeps, f"Gibbs sweep {sweep}/{sweeps}")
    return Z, spans, hyper


def reconstruction_rmse(model: PPMTFModel, tensors: TrainingTensors) -> dict[str, float]:
    """RMSE of the model's predictions on the non-zero and zero cells of each tensor."""
    out = {}
    for name, X in (("trans", model.C), ("visit", model.D)):
        u, i, j, v = tensors.cells(name)
        pred = np.einsum("ek,ek,ek->e", model.A[u], model.B[i], X[j])
        nz = v > 0
        out[f"{name}_nonzero"] = float(np.sqrt(np.mean((pred[nz] - v[nz]) ** 2))) if nz.any() else 0.0
        out[f"{name}_zero"] = float(np.sqrt(np.mean(pred[~nz] ** 2))) if (~nz).any() else 0.0
    return out
