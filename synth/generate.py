"""PPMTF+ generation: fresh virtual users per team, contest home variant, contest datasets.

Implements ``../shared/PPMTF.md`` sections 3 and 4 on a trained
:class:`~synth.ppmtf.PPMTFModel`:

1. **Feature vectors** (:func:`draw_features`): every (team, challenge) pair
   gets its own m i.i.d. draws from N(mu_A, Lambda_A^-1); the training users'
   A is never used (diversity, paper Appendix A).
2. **Per-user distributions**: visit distributions pi_t = normalised
   max((D o a) B^T, delta) restricted to the training visit support (ReadVisit),
   and the proposal Q = normalised max((B o a) C^T, delta) restricted to the
   training transition support (ReadTrans); outside a support a cell keeps
   delta = 1e-8 (the deltas are applied before normalisation).
3. **Home** (paper Appendix D): h ~ pi_0 of the user; in the home periods
   (model slots overlapping the first and the last ``home_minutes`` of the
   contest day, and any part of the model's day outside the contest day)
   Gamma = 20 is added to pi_t(h) and the row renormalised, so pi_t(h) >= 20/21.
4. **Traces**: a day is a chain over instants ``instant_minutes`` apart
   (default 5 min, as the contest script) covering the model's day; x_0 ~ pi_0,
   then x_k ~ K_slot(k)(x_{k-1}, .), the Metropolis-Hastings kernel with
   proposal Q and target pi_t, sampled by propose-accept with per-row CDFs
   over the sparse support (O(log M) per step, vectorised over every
   (user, day) chain of a batch). Each day restarts from pi_0.

**Evening return (improvement on the reference, PPMTF.md 6 item 8).** With
Q restricted to observed transitions, the reference kernel rarely proposes
the home region from a distant work place, so only 20-26% of users were home
in the last periods. Here, in the home periods, each step is the mixture
``(1 - rho) K_t + rho Pi_t`` where ``Pi_t(x, .) = pi_t`` is an independence
Metropolis-Hastings move whose proposal is the target itself (always
accepted). Both kernels leave pi_t invariant and satisfy detailed balance, so
the mixture does too: the population distribution is unchanged, the chain
only mixes faster towards pi_t, where home has mass >= 20/21. With
``rho = home_jump = 0.5`` per 5-minute instant, a user at work at 17:00 is
home by 17:30 with probability about 0.95 (the jump is the commute); measured
at 17:30: 0.94 with the mixture, 0.03-0.05 without it (city and people-flow
models).

Contest slots (default 20 slots, 8:00-17:30 every 30 minutes) are the chain's
states at the instants with those clock times (point sampling). Slot
``q``'s clock must lie on the instant grid inside the model's day.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.io import write_traces
from scoring.traces import Traces
from synth.ppmtf import PPMTFModel

GENERATOR_VERSION = "tracecup-ppmtf-plus-1"

DELTA = 1e-8            # floor of visit and transition weights (PPMTF.md 4.1)
GAMMA = 20.0            # home boost (PPMTF.md 4.4)
CHALLENGES = ((1, "IDP"), (2, "TRP"))

Progress = Callable[[int, int, str], None]


def _no_progress(done: int, total: int, message: str) -> None:
    return None


# ---------------------------------------------------------------------------
# Feature vectors (PPMTF.md section 3)
# ---------------------------------------------------------------------------
def draw_features(model: PPMTFModel, m: int, rng: np.random.Generator) -> np.ndarray:
    """(m, K) i.i.d. draws from N(mu_A, Lambda_A^-1): one team's virtual users.

    Uses the Cholesky factor of the precision: a = mu + L^-T z with
    Lambda = L L^T, so Cov(a) = Lambda^-1 without inverting Lambda.
    """
    L = np.linalg.cholesky(model.Lambda_A)
    z = rng.standard_normal((model.K, m))
    return model.mu_A[None, :] + np.linalg.solve(L.T, z).T


# ---------------------------------------------------------------------------
# Per-user distributions (PPMTF.md 4.1)
# ---------------------------------------------------------------------------
def visit_distributions(model: PPMTFModel, features: np.ndarray, *, read_visit: bool = True,
                        delta: float = DELTA) -> np.ndarray:
    """(U, T, M) normalised visit distributions pi_t of each feature vector.

    V[t, i] = sum_k a_k d_tk b_ik; negative values become ``delta`` (exact
    zeros and positive values are kept); with ``read_visit`` cells outside the
    training visit support become ``delta``; each row is normalised.
    """
    a = np.asarray(features, dtype=np.float64)
    U, K = a.shape
    V = ((a[:, None, :] * model.D[None, :, :]).reshape(U * model.T, K) @ model.B.T)
    V = V.reshape(U, model.T, model.M)
    V[V < 0] = delta
    if read_visit:
        V[:, ~model.visit_support] = delta
    s = V.sum(axis=2, keepdims=True)
    if np.any(s <= 0):
        raise ValueError("a visit distribution has a non-positive row sum")
    return V / s


@dataclass(frozen=True)
class TransitionSupport:
    """The cells where Q is computed from the factors, as CSR over the source region.

    With ReadTrans the cells are the training transitions; without it, all
    M*M cells. Outside the support Q has weight ``delta``.

    Attributes:
        M: regions; indptr: (M+1,) int64; src, dst: (nnz,) int64; keys: (nnz,)
        int64 sorted ``src*M + dst``; full: True when every cell is in the support.
    """

    M: int
    indptr: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    keys: np.ndarray
    full: bool

    @classmethod
    def of(cls, model: PPMTFModel, read_trans: bool = True) -> TransitionSupport:
        M = model.M
        keys = (np.asarray(model.trans_support, dtype=np.int64) if read_trans
                else np.arange(M * M, dtype=np.int64))
        src, dst = keys // M, keys % M
        indptr = np.searchsorted(src, np.arange(M + 1))
        return cls(M, indptr, src, dst, keys, full=len(keys) == M * M)

    @property
    def nnz(self) -> int:
        return len(self.keys)

    @property
    def row_nnz(self) -> np.ndarray:
        return np.diff(self.indptr)

    def lookup(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Position of cell (x, y) in the support, or -1 where it is not in it."""
        k = x.astype(np.int64) * self.M + y
        pos = np.searchsorted(self.keys, k)
        pos = np.minimum(pos, max(self.nnz - 1, 0))
        if self.nnz == 0:
            return np.full(len(k), -1, dtype=np.int64)
        return np.where(self.keys[pos] == k, pos, -1)


def transition_weights(model: PPMTFModel, support: TransitionSupport, features: np.ndarray,
                       delta: float = DELTA) -> np.ndarray:
    """(U, nnz) weights P[x, y] = max(sum_k a_k b_xk c_yk, delta) on the support cells."""
    G = model.B[support.src] * model.C[support.dst]            # (nnz, K), shared by all users
    P = np.asarray(features, dtype=np.float64) @ G.T           # (U, nnz)
    np.maximum(P, delta, out=P)
    return P


def dense_kernels(model: PPMTFModel, features: np.ndarray, pi: np.ndarray, *,
                  read_trans: bool = True, delta: float = DELTA) -> tuple[np.ndarray, np.ndarray]:
    """Explicit Q (M, M) and K_t (T, M, M) of ONE user (tests only: O(T M^2) memory).

    K_t(x, y) = Q(x, y) min{1, pi_t(y) Q(y, x) / (pi_t(x) Q(x, y))} for y != x
    and K_t(x, x) = 1 - sum_{y != x} K_t(x, y).
    """
    a = np.asarray(features, dtype=np.float64).reshape(-1)
    M = model.M
    P = np.maximum((model.B * a) @ model.C.T, delta)
    if read_trans:
        mask = np.zeros(M * M, dtype=bool)
        mask[model.trans_support] = True
        P[~mask.reshape(M, M)] = delta
    Q = P / P.sum(axis=1, keepdims=True)
    Kt = np.empty((len(pi), M, M))
    for t, p in enumerate(pi):
        ratio = (p[None, :] * Q.T) / (p[:, None] * Q)
        k = Q * np.minimum(1.0, ratio)
        np.fill_diagonal(k, 0.0)
        k[np.arange(M), np.arange(M)] = 1.0 - k.sum(axis=1)
        Kt[t] = k
    return Q, Kt


# ---------------------------------------------------------------------------
# Vectorised sampling helpers
# ---------------------------------------------------------------------------
def _search(cum: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Smallest p in [lo, hi) with cum[p] >= target (flat ``cum``, per-chain bounds).

    Bisection with a fixed number of vectorised steps; returns ``hi - 1``
    where no position qualifies (rounding at the end of a row).
    """
    lo = lo.astype(np.int64).copy()
    hi0 = hi.astype(np.int64)
    hi = hi0.copy()
    width = int((hi - lo).max()) if len(lo) else 0
    for _ in range(max(width, 1).bit_length()):
        mid = (lo + hi) // 2
        go = cum[np.minimum(mid, len(cum) - 1)] < target
        go &= mid < hi
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return np.minimum(lo, hi0 - 1)


@dataclass
class _UserBatch:
    """Distributions of a batch of U users, flattened for gathers."""

    U: int
    pi: np.ndarray        # (U, T, M) target distributions (home-boosted)
    pi_cum: np.ndarray    # (U*T*M,) cumulative pi per (user, slot) row
    P: np.ndarray         # (U, nnz) transition weights on the support
    cum: np.ndarray       # (U*nnz,) cumulative P per user, row-local after subtracting base
    base: np.ndarray      # (U, M) cumulative weight before row x
    on: np.ndarray        # (U, M) support weight of row x
    total: np.ndarray     # (U, M) row sum of P including delta off-support


class Synthesizer:
    """PPMTF+ trace synthesis from a model, with the contest's clock and home variant.

    Args:
        model: the trained model.
        slots: contest slots per day S (default 20).
        slot_start_minute, slot_step_minutes: clock of contest slot 0 and the
            slot spacing (default 8:00, 30 min).
        instant_minutes: spacing of the chain's instants (default 5, as the
            2019 contest script's 12 instants per hour).
        home: apply the home variant (Appendix D).
        gamma: home boost Gamma.
        home_minutes: length of the morning and evening home windows at the
            start and end of the contest day.
        home_jump: rho, the probability of an independence move from pi_t per
            instant in the home periods (0 = the reference kernel alone).
        read_trans, read_visit: restrict Q and pi to the training supports.
        delta: floor of weights.
        batch_bytes: memory budget of one user batch's arrays.
    """

    def __init__(self, model: PPMTFModel, *, slots: int = 20, slot_start_minute: float = 480,
                 slot_step_minutes: float = 30, instant_minutes: float = 5, home: bool = True,
                 gamma: float = GAMMA, home_minutes: float = 60, home_jump: float = 0.5,
                 read_trans: bool = True, read_visit: bool = True, delta: float = DELTA,
                 batch_bytes: int = 256 << 20):
        self.model = model
        self.S = int(slots)
        self.home = home
        self.gamma = float(gamma)
        self.home_jump = float(home_jump) if home else 0.0
        self.read_visit = read_visit
        self.read_trans = read_trans
        self.instant_minutes = float(instant_minutes)
        self.home_minutes = float(home_minutes)
        self.delta = float(delta)
        self.batch_bytes = int(batch_bytes)
        self.support = TransitionSupport.of(model, read_trans)
        # Position of the reverse cell (j, i) of every support cell (i, j), -1 if absent.
        self.reverse = self.support.lookup(self.support.dst, self.support.src)
        T, length = model.T, model.T * model.slot_minutes
        n_inst = int(np.floor(length / instant_minutes + 1e-9))
        clock = np.arange(n_inst) * instant_minutes           # minutes after the model's day start
        self.slot_of_instant = np.minimum((clock / model.slot_minutes + 1e-9).astype(np.int64), T - 1)
        want = (slot_start_minute + np.arange(self.S) * slot_step_minutes - model.slot_start_minute)
        k = np.rint(want / instant_minutes).astype(np.int64)
        if np.any(np.abs(k * instant_minutes - want) > 1e-6) or k.min() < 0 or k.max() >= n_inst:
            raise ValueError(
                f"contest slots {slot_start_minute:g} + {slot_step_minutes:g}*q min (q < {self.S}) do not "
                f"lie on the model's {instant_minutes:g}-minute instants between "
                f"{model.slot_start_minute:g} and {model.slot_start_minute + length:g} min")
        self.sample_instants = k
        self.n_instants = int(k.max()) + 1                     # no need to run past the last slot
        # Home periods: model slots overlapping [day start, first contest slot + home_minutes)
        # or [end of the contest day - home_minutes, day end). With the model's day equal to
        # the contest's (8:00-18:00) these are 8:00-9:00 and 17:00-18:00.
        lo_t = model.slot_start_minute + np.arange(T) * model.slot_minutes
        morning_end = slot_start_minute + home_minutes
        evening_start = slot_start_minute + self.S * slot_step_minutes - home_minutes
        self.home_slots = np.flatnonzero((lo_t < morning_end - 1e-9)
                                         | (lo_t + model.slot_minutes > evening_start + 1e-9))

    def options(self) -> dict:
        """The synthesizer's settings, JSON-serialisable (for the manifest)."""
        return dict(instant_minutes=self.instant_minutes, home=self.home, gamma=self.gamma,
                    home_minutes=self.home_minutes, home_jump=self.home_jump,
                    home_slots=[int(t) for t in self.home_slots], read_trans=self.read_trans,
                    read_visit=self.read_visit, delta=self.delta,
                    sample_instants=[int(k) for k in self.sample_instants])

    # -- per-batch distributions ------------------------------------------
    def _batch(self, features: np.ndarray, rng: np.random.Generator):
        m = self.model
        pi = visit_distributions(m, features, read_visit=self.read_visit, delta=self.delta)
        U = len(features)
        homes = np.full(U, -1, dtype=np.int64)
        if self.home:
            # Home h ~ the user's own unboosted pi_0 (Appendix D: "population distribution at 6:00").
            homes = self._draw_rows(np.cumsum(pi[:, 0, :], axis=1), rng.random(U))
            if len(self.home_slots):
                rows = pi[:, self.home_slots, :]
                rows[np.arange(U), :, homes] += self.gamma
                rows /= rows.sum(axis=2, keepdims=True)
                pi[:, self.home_slots, :] = rows
        sup = self.support
        P = transition_weights(m, sup, features, self.delta)
        cum = np.cumsum(P, axis=1)
        zero = np.zeros((U, 1))
        cpad = np.concatenate([zero, cum], axis=1)
        base = cpad[:, sup.indptr[:-1]]
        on = cpad[:, sup.indptr[1:]] - base
        total = on + self.delta * (m.M - sup.row_nnz)[None, :]
        pi_cum = np.cumsum(pi, axis=2)
        return _UserBatch(U, pi, pi_cum.ravel(), P, cum.ravel(), base, on, total), homes

    @staticmethod
    def _draw_rows(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Index drawn from each row of an (R, M) cumulative array with uniforms u (R,)."""
        R, M = cum.shape
        starts = np.arange(R, dtype=np.int64) * M
        p = _search(cum.ravel(), starts, starts + M, u * cum[:, -1])
        return p - starts

    def _draw_pi(self, b: _UserBatch, user: np.ndarray, t: np.ndarray, rng) -> np.ndarray:
        M = self.model.M
        row = (user * self.model.T + t) * M
        u = rng.random(len(user)) * b.pi_cum[row + M - 1]
        return _search(b.pi_cum, row, row + M, u) - row

    def _weight(self, b: _UserBatch, user: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Transition weight P of each chain's user at support position ``pos`` (delta where -1)."""
        w = np.full(len(pos), self.delta)
        hit = pos >= 0
        w[hit] = b.P[user[hit], pos[hit]]
        return w

    def _mh_step(self, b: _UserBatch, user: np.ndarray, x: np.ndarray, t: int, rng) -> np.ndarray:
        """One propose-accept Metropolis-Hastings step of K_t for every chain."""
        m, sup = self.model, self.support
        M, nnz = m.M, sup.nnz
        C = len(x)
        tot = b.total[user, x]
        on = b.on[user, x]
        v = rng.random(C) * tot
        y = np.empty(C, dtype=np.int64)
        pos = np.full(C, -1, dtype=np.int64)           # support position of (x, y), -1 outside
        in_sup = v < on
        if in_sup.any():
            uu, xx = user[in_sup], x[in_sup]
            off = uu * nnz
            target = v[in_sup] + b.base[uu, xx]
            # cum is cumulative over the user's whole support; rows are contiguous.
            p = _search(b.cum, off + sup.indptr[xx], off + sup.indptr[xx + 1], target) - off
            y[in_sup] = sup.dst[p]
            pos[in_sup] = p
        out = ~in_sup
        if out.any():
            # Uniform over the cells of row x outside the support (rare: total weight delta*(M-n_x)).
            idx = np.flatnonzero(out)
            while len(idx):
                cand = rng.integers(0, M, size=len(idx))
                ok = sup.lookup(x[idx], cand) < 0
                y[idx[ok]] = cand[ok]
                idx = idx[~ok]
        move = y != x
        if not move.any():
            return x
        um, xm, ym, pm = user[move], x[move], y[move], pos[move]
        # Reverse cell (y, x): precomputed for support cells, looked up for the rare others.
        rp = np.where(pm >= 0, self.reverse[np.maximum(pm, 0)], -1)
        miss = pm < 0
        if miss.any():
            rp[miss] = sup.lookup(ym[miss], xm[miss])
        pi_t = b.pi[:, t, :]
        q_xy = self._weight(b, um, pm) / b.total[um, xm]
        q_yx = self._weight(b, um, rp) / b.total[um, ym]
        ratio = (pi_t[um, ym] * q_yx) / (pi_t[um, xm] * q_xy)
        acc = rng.random(len(um)) < ratio
        x = x.copy()
        x[np.flatnonzero(move)[acc]] = ym[acc]
        return x

    # -- traces -------------------------------------------------------------
    def synthesize(self, features: np.ndarray, n_days: int, rng: np.random.Generator,
                   progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Traces of the virtual users with the given feature vectors.

        Args:
            features: (m, K) feature vectors.
            n_days: independent days per user.
            rng: the generator.
            progress: ``progress(users_done, m, message)`` per batch.

        Returns:
            regions (m, n_days, S) int32 0-based region at each contest slot,
            homes (m,) int64 home region (-1 without the home variant).
        """
        progress = progress or _no_progress
        features = np.atleast_2d(np.asarray(features, dtype=np.float64))
        m_users = len(features)
        m = self.model
        per_user = 8 * (3 * m.T * m.M + 2 * self.support.nnz + 3 * m.M) + 64 * n_days
        bsz = int(max(1, min(m_users, self.batch_bytes // per_user)))
        out = np.empty((m_users, n_days, self.S), dtype=np.int32)
        homes = np.empty(m_users, dtype=np.int64)
        for lo in range(0, m_users, bsz):
            hi = min(m_users, lo + bsz)
            b, h = self._batch(features[lo:hi], rng)
            homes[lo:hi] = h
            out[lo:hi] = self._run(b, n_days, rng)
            progress(hi, m_users, f"synthesized {hi}/{m_users} users")
        return out, homes

    def _run(self, b: _UserBatch, n_days: int, rng) -> np.ndarray:
        user = np.repeat(np.arange(b.U, dtype=np.int64), n_days)
        x = self._draw_pi(b, user, np.zeros(len(user), dtype=np.int64), rng)
        res = np.empty((len(user), self.S), dtype=np.int32)
        where = {int(k): q for q, k in enumerate(self.sample_instants)}
        jump_slots = set(int(t) for t in self.home_slots) if self.home_jump > 0 else set()
        if 0 in where:
            res[:, where[0]] = x
        for k in range(1, self.n_instants):
            t = int(self.slot_of_instant[k])
            if t in jump_slots:
                jump = rng.random(len(x)) < self.home_jump
                xn = x.copy()
                if jump.any():
                    xn[jump] = self._draw_pi(b, user[jump], np.full(jump.sum(), t), rng)
                stay = ~jump
                if stay.any():
                    xn[stay] = self._mh_step(b, user[stay], x[stay], t, rng)
                x = xn
            else:
                x = self._mh_step(b, user, x, t, rng)
            if k in where:
                res[:, where[k]] = x
        return res.reshape(b.U, n_days, self.S)


# ---------------------------------------------------------------------------
# Contest datasets (SPEC sections 3-5)
# ---------------------------------------------------------------------------
def set_name(kind: str, team: int, data_no: int, flag: str) -> str:
    """2019 file name, e.g. ``reftraces_team001_data01_IDP.csv``."""
    return f"{kind}traces_team{team:03d}_data{data_no:02d}_{flag}.csv"


def draw_days(ref_days: int, org_days: int, pool_days: int, rng: np.random.Generator):
    """Calendar day numbers (1-based) of the reference and original days.

    ``ref_days + org_days`` distinct days are drawn uniformly from
    ``1..pool_days`` and split at random into the reference and the original
    days (sporadic, as the 2019 final round), each set ascending.
    """
    n = ref_days + org_days
    if pool_days < n:
        raise ValueError(f"day pool of {pool_days} days is smaller than {ref_days} + {org_days} days")
    days = rng.choice(np.arange(1, pool_days + 1), size=n, replace=False)
    return np.sort(days[:ref_days]), np.sort(days[ref_days:])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def generate_set(model: PPMTFModel, synth: Synthesizer, out_dir, team: int, data_no: int, flag: str,
                 *, users: int = 2000, ref_days: int = 20, org_days: int = 20, seed: int = 0) -> dict:
    """Generate one (team, challenge) set: fresh users, R and O files; return their names.

    The set's random stream is ``default_rng([seed, team, data_no])``: feature
    vectors first, then the traces. Days ``0..Lr-1`` of each user are the
    reference days and the rest the original days (days are i.i.d. given the
    user, so which generated day gets which calendar number does not matter).
    """
    out = Path(out_dir)
    rng = np.random.default_rng([seed, team, data_no])
    feats = draw_features(model, users, rng)
    regions, _homes = synth.synthesize(feats, ref_days + org_days, rng)
    S = synth.S
    user_ids = np.arange(1, users + 1)
    names = {}
    for kind, tids, arr in (("ref", np.arange(1, S * ref_days + 1), regions[:, :ref_days]),
                            ("org", np.arange(S * ref_days + 1, S * (ref_days + org_days) + 1),
                             regions[:, ref_days:])):
        name = set_name(kind, team, data_no, flag)
        write_traces(Traces(user_ids, tids, np.ascontiguousarray(arr).reshape(users, -1)), out / name)
        names[f"{kind}traces"] = name
    return names


def generate_round(model: PPMTFModel, out_dir, teams: int, *, users: int = 2000, ref_days: int = 20,
                   org_days: int = 20, seed: int = 0, pool_days: int | None = None,
                   grid: Grid | None = None, slots: int = 20, slot_start_minute: int = 480,
                   slot_minutes: int = 30, progress: Progress | None = None,
                   **synth_options) -> dict:
    """Write a round's datasets and ``manifest.json`` into ``out_dir``; return the manifest.

    Sets: every team 1..``teams`` and challenge (data01 IDP, data02 TRP), the
    benchmark (team ``teams+1``) and two sample sets (teams ``teams+2``,
    ``teams+3``), each challenge of each with its own independent virtual
    users (fresh feature vectors per pair). Every set has the reference
    traces R (time ids 1..S*Lr) and original traces O (S*Lr+1..S*(Lr+Lo)) of
    the same users, on the same calendar days listed in ``info_time.csv``.

    Each set's random stream is ``default_rng([seed, team, data_no])`` and the
    calendar days come from ``default_rng([seed, 0, 0])``, so a set's bytes do
    not depend on how many other sets are generated. Same seed, same bytes.

    Args:
        model: trained PPMTF model (its grid shape must match ``grid``).
        out_dir: output folder (created).
        teams: number of participating teams tau.
        users: m virtual users per set; ref_days, org_days: Lr, Lo.
        seed: master seed.
        pool_days: calendar days the sporadic days are drawn from (default
            ``1.5 * (Lr + Lo)``, the contest script's 60 days for 40).
        grid: the contest grid for ``info_region.csv`` (default: the model's
            training grid, :meth:`PPMTFModel.grid`).
        slots, slot_start_minute, slot_minutes: the contest's time slots.
        progress: ``progress(sets_done, n_sets, message)``.
        synth_options: passed to :class:`Synthesizer` (home_jump, gamma, ...).
    """
    progress = progress or _no_progress
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if grid is None:
        grid = model.grid()
    if (grid.nx, grid.ny) != (model.nx, model.ny):
        raise ValueError(f"grid {grid.nx} x {grid.ny} does not match the model's {model.nx} x {model.ny}")
    if pool_days is None:
        pool_days = int(np.ceil(1.5 * (ref_days + org_days)))
    synth = Synthesizer(model, slots=slots, slot_start_minute=slot_start_minute,
                        slot_step_minutes=slot_minutes, **synth_options)
    ref_cal, org_cal = draw_days(ref_days, org_days, pool_days, np.random.default_rng([seed, 0, 0]))
    axis = TimeAxis(slots_per_day=slots, ref_days=ref_days, org_days=org_days,
                    start_minute=slot_start_minute, slot_minutes=slot_minutes,
                    day_numbers=tuple(int(d) for d in np.concatenate([ref_cal, org_cal])))
    grid.write_info_region(out / "info_region.csv")
    axis.write_info_time(out / "info_time.csv")

    roles = [(t, "team") for t in range(1, teams + 1)] + [(teams + 1, "benchmark"),
                                                         (teams + 2, "sample"), (teams + 3, "sample")]
    jobs = [(team, role, d, flag) for team, role in roles for d, flag in CHALLENGES]
    sets = []
    progress(0, len(jobs), "generating datasets")
    for n, (team, role, d, flag) in enumerate(jobs):
        names = generate_set(model, synth, out, team, d, flag, users=users, ref_days=ref_days,
                             org_days=org_days, seed=seed)
        sets.append(dict(team=team, role=role, data=d, flag=flag, **names))
        progress(n + 1, len(jobs), f"team {team:03d} data{d:02d} {flag} ({role})")

    files = {}
    for p in sorted(out.iterdir()):
        if p.name != "manifest.json" and p.is_file():
            files[p.name] = dict(sha256=_sha256(p), size=p.stat().st_size)
    manifest = dict(
        generator="PPMTF+", generator_version=GENERATOR_VERSION, seed=seed,
        parameters=dict(teams=teams, users=users, ref_days=ref_days, org_days=org_days,
                        pool_days=pool_days, slots=slots, slot_start_minute=slot_start_minute,
                        slot_minutes=slot_minutes, ref_day_numbers=[int(x) for x in ref_cal],
                        org_day_numbers=[int(x) for x in org_cal],
                        synthesizer=synth.options()),
        model=dict(version=model.version, K=model.K, M=model.M, T=model.T, nx=model.nx, ny=model.ny,
                   slot_start_minute=model.slot_start_minute, slot_minutes=model.slot_minutes,
                   params=model.params),
        grid=dict(nx=grid.nx, ny=grid.ny, min_x=grid.min_x, max_x=grid.max_x, min_y=grid.min_y,
                  max_y=grid.max_y),
        sets=sets, files=files)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")
    return manifest
