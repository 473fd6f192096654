"""PPMTF+: the ``ppmtf`` method's generation (fresh virtual users, contest home variant) and its registration.

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
3. **Home** (paper Appendix D, the 2019 contest script): h ~ pi_0 of the
   user; in the home periods, the model slots within the first and the last
   ``home_minutes`` (2 h in 2019; :data:`HOME_MINUTES`) of the model's *full* day, Gamma = 20 is
   added to pi_t(h) and the row renormalised, so pi_t(h) >= 20/21. The full
   day is longer than the contest's: the 2019 script ran 6:00-18:00 and the
   contest kept 8:00-17:30, so the morning boost (6:00-8:00) lies before the
   first contest slot and users have started to leave home by 8:00, and the
   evening boost (16:00-18:00) pulls them back only as fast as the
   Metropolis-Hastings kernel mixes (:func:`train_contest_model` trains on
   such a full day). Boosting inside the contest's own first and last hour,
   as this module once did, put 95 % of users at home at 8:00
   and 17:30 and made the HomeProb attacks decide every minimum.
4. **Traces**: a day is a chain over instants ``instant_minutes`` apart
   (default 5 min, as the contest script) covering the model's day; x_0 ~ pi_0,
   then x_k ~ K_slot(k)(x_{k-1}, .), the Metropolis-Hastings kernel with
   proposal Q and target pi_t, sampled by propose-accept with per-row CDFs
   over the sparse support (O(log M) per step, vectorised over every
   (user, day) chain of a batch). Each day restarts from pi_0. There is no
   extra move towards home: an earlier "evening return" jump (an
   independence move from pi_t with probability 0.5 per instant) is gone,
   because it made the first and last slots the same region on 90 % of
   user-days, against 7 % in the 2019 data.

Contest slots (default 20 slots, 8:00-17:30 every 30 minutes) are the chain's
states at the instants with those clock times (point sampling). Slot
``q``'s clock must lie on the instant grid inside the model's day.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.grid import Grid, TimeAxis
from synth import ppmtf
from synth.city import CityModel
from synth.common import Progress, no_progress
from synth.ppmtf import PPMTFModel
from synth.registry import Method, bool_check, int_check, number_check, register, with_reason

METHOD = PPMTFModel.method
GENERATOR_VERSION = "tracecup-ppmtf-plus-1"

DELTA = 1e-8            # floor of visit and transition weights (PPMTF.md 4.1)
GAMMA = 20.0            # home boost (PPMTF.md 4.4)
#: Home windows at both ends of the model's full day, minutes. The 2019 script boosted two
#: hours (6:00-8:00, 16:00-18:00); ending the morning boost a little before 8:00 gives the
#: 2019 data's home share at 8:00 and HomeProb strength (``python -m synth calibrate``, README).
HOME_MINUTES = 115.0


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
    pi: np.ndarray        # (U, 2T, M) target distributions: rows t < T plain, T + t home-boosted
    pi_cum: np.ndarray    # (U*2T*M,) cumulative pi per (user, row)
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
            start and end of the model's full day (2019 script: 2 h of
            6:00-18:00; default :data:`HOME_MINUTES`).
        read_trans, read_visit: restrict Q and pi to the training supports.
        delta: floor of weights.
        batch_bytes: memory budget of one user batch's arrays.
    """

    def __init__(self, model: PPMTFModel, *, slots: int = 20, slot_start_minute: float = 480,
                 slot_step_minutes: float = 30, instant_minutes: float = 5, home: bool = True,
                 gamma: float = GAMMA, home_minutes: float = HOME_MINUTES,
                 read_trans: bool = True, read_visit: bool = True, delta: float = DELTA,
                 batch_bytes: int = 256 << 20):
        self.model = model
        self.S = int(slots)
        self.home = home
        self.gamma = float(gamma)
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
        # Home periods: the instants within the first or the last home_minutes of the model's
        # full day (6:00-8:00 and 16:00-18:00 on the 2019 script's 6:00-18:00 day). They use the
        # home-boosted copy (row T + t) of their slot's pi_t; a window may end inside a slot.
        home_instant = ((clock < home_minutes - 1e-9) | (clock >= length - home_minutes - 1e-9)) & home
        self.row_of_instant = self.slot_of_instant + T * home_instant
        self.home_slots = np.unique(self.slot_of_instant[home_instant])

    def options(self) -> dict:
        """The synthesizer's settings, JSON-serialisable (for the manifest)."""
        return dict(instant_minutes=self.instant_minutes, home=self.home, gamma=self.gamma,
                    home_minutes=self.home_minutes,
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
            boosted = pi.copy()
            boosted[np.arange(U), :, homes] += self.gamma
            boosted /= boosted.sum(axis=2, keepdims=True)
            pi = np.concatenate([pi, boosted], axis=1)
        else:
            pi = np.concatenate([pi, pi], axis=1)
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
        row = (user * 2 * self.model.T + t) * M
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
        progress = progress or no_progress
        features = np.atleast_2d(np.asarray(features, dtype=np.float64))
        m_users = len(features)
        m = self.model
        per_user = 8 * (5 * m.T * m.M + 2 * self.support.nnz + 3 * m.M) + 64 * n_days
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

    def sample_set(self, users: int, n_days: int, rng: np.random.Generator, progress=None) -> np.ndarray:
        """(users, n_days, S) regions of fresh virtual users (features drawn first from ``rng``)."""
        feats = draw_features(self.model, users, rng)
        regions, _homes = self.synthesize(feats, n_days, rng, progress)
        return regions

    def _run(self, b: _UserBatch, n_days: int, rng) -> np.ndarray:
        user = np.repeat(np.arange(b.U, dtype=np.int64), n_days)
        x = self._draw_pi(b, user, np.full(len(user), self.row_of_instant[0], dtype=np.int64), rng)
        res = np.empty((len(user), self.S), dtype=np.int32)
        where = {int(k): q for q, k in enumerate(self.sample_instants)}
        if 0 in where:
            res[:, where[0]] = x
        for k in range(1, self.n_instants):
            x = self._mh_step(b, user, x, int(self.row_of_instant[k]), rng)
            if k in where:
                res[:, where[k]] = x
        return res.reshape(b.U, n_days, self.S)


# ---------------------------------------------------------------------------
# The contest's model: PPMTF trained on the built-in city over the full day
# ---------------------------------------------------------------------------
#: Defaults of a contest's synthesizer (``Contest.synthesizer_params``), set by
#: ``python -m synth calibrate`` so that generated data plays like 2019 (README,
#: "Calibration"). ``lead_minutes``/``tail_minutes``: how far the model's full
#: day extends before the first contest slot and after the contest day's end
#: (the 2019 script: 6:00-18:00 around 8:00-17:30).
CONTEST_DEFAULTS = dict(train_users=300, train_days=10, K=16, sweeps=30, lead_minutes=120, tail_minutes=0)


def full_day(axis: TimeAxis, lead_minutes: int, tail_minutes: int) -> tuple[int, int, int]:
    """(slots, start minute, slot minutes) of the model's full day around a contest axis.

    The full day starts ``lead_minutes`` before the first contest slot and
    ends ``tail_minutes`` after the contest day, in the contest's slot length;
    both must be whole slots.
    """
    step = int(axis.slot_minutes)
    for name, value in (("lead_minutes", lead_minutes), ("tail_minutes", tail_minutes)):
        if value < 0 or value % step:
            raise ValueError(f"{name} = {value}: expected a non-negative multiple of the {step}-minute slot")
    start = int(axis.start_minute) - int(lead_minutes)
    if start < 0:
        raise ValueError(f"lead_minutes = {lead_minutes} starts the model's day before midnight")
    slots = int(axis.slots_per_day) + (int(lead_minutes) + int(tail_minutes)) // step
    if start + slots * step > 24 * 60:
        raise ValueError(f"tail_minutes = {tail_minutes} ends the model's day after midnight")
    return slots, start, step


def train_contest_model(grid: Grid, axis: TimeAxis, *, seed: int, city_seed: int = 0,
                        progress: Progress | None = None, **params) -> PPMTFModel:
    """PPMTF trained on the built-in city's traces over the contest's full day.

    Args:
        grid: the contest grid; axis: the contest's time axis.
        seed: seeds the city's people and the Gibbs sampler.
        city_seed: the city (hubs, fields) seed.
        params: any of :data:`CONTEST_DEFAULTS` (``train_users``, ``train_days``,
            ``K``, ``sweeps``, ``lead_minutes``, ``tail_minutes``).
    """
    unknown = set(params) - set(CONTEST_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown synthesizer parameter(s) {sorted(unknown)}; known: {sorted(CONTEST_DEFAULTS)}")
    p = {**CONTEST_DEFAULTS, **params}
    slots, start, step = full_day(axis, int(p["lead_minutes"]), int(p["tail_minutes"]))
    city = CityModel(grid, seed=int(city_seed))
    training = city.simulate(int(p["train_users"]), int(p["train_days"]), slots_per_day=slots,
                             start_minute=start, slot_minutes=step, seed=seed)
    return ppmtf.train(training, grid, slots_per_day=slots, K=int(p["K"]), sweeps=int(p["sweeps"]), seed=seed,
                       slot_start_minute=start, slot_minutes=step, progress=progress)


def describe(model: PPMTFModel) -> dict:
    """The model's public description for a round's manifest (its shape, clock and training parameters)."""
    return dict(model.frame_description(), K=model.K, params=model.params)


_SLOT_MULTIPLE = "minutes, an integer in [0, 720] (a multiple of the slot length)"
register(Method(
    name=METHOD,
    title="PPMTF+ (per-user latent features, PPMTF.md)",
    # ppmtf.train's keywords, and the contest's full day around its slots (CONTEST_DEFAULTS)
    training={"K": int_check(1, 256), "sweeps": int_check(1, 1000),
              "lead_minutes": (int_check(0, 720)[0], _SLOT_MULTIPLE),
              "tail_minutes": (int_check(0, 720)[0], _SLOT_MULTIPLE)},
    # Synthesizer's keywords (PPMTF.md 4.1-4.4)
    options={"instant_minutes": with_reason(number_check(1, 60), "minutes between the instants of a trace; "
                                                                 "fewer than 1 would hold a day's instants "
                                                                 "for every user in memory"),
             "home": bool_check(), "read_trans": bool_check(), "read_visit": bool_check(),
             "gamma": number_check(0, 1000), "home_minutes": number_check(0, 1440),
             "delta": number_check(0, 1, open_lo=True),
             "batch_bytes": with_reason(int_check(1 << 20, 1 << 30), "bytes of one generation batch: "
                                                                    "the worker holds a batch in memory")},
    train=ppmtf.train, synthesizer=Synthesizer, load=PPMTFModel.load,
    generator="PPMTF+", generator_version=GENERATOR_VERSION, describe=describe,
    train_contest=train_contest_model))
