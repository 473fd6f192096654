"""Semantic fake traces (seed 002: Bindschaedler and Shokri, "Privacy through Fake yet Semantically Real Traces").

Training (:func:`train`, the paper's Fig. 2 up to the clustering):

1. **Mobility profiles** (sec. 3.1): per training user u, the visiting
   probability pi_tau(u) over regions in each time period tau (the day's
   slots cut into ``periods`` blocks) and the transition probabilities
   p_{r,tau}(u) between consecutive slots of the same day (maximum likelihood).
2. **Aggregate model** (sec. 4.2): p_bar_r^r' = (sum_u p_r^r'(u) + eps *
   max(1, d(r, r'))^-2) / z_r per period (d in grid cells), pi_bar the mean of
   pi(u).
3. **Semantic similarity** (sec. 3.4, zeroth order, eq. 10):
   sim_S(u, v) = max_sigma sum_tau w_tau sum_r min(pi_tau^r(u), pi_tau^sigma(r)(v))
   with w_tau the share of the day's slots in period tau, solved as a linear
   assignment (``scipy.optimize.linear_sum_assignment``) between the regions
   u visits and the regions v visits (regions outside both supports add 0).
4. **Semantic clustering** (Fig. 2 SemanticClustering): the location semantic
   graph w_G(r, sigma_uv(r)) += sim_S(u, v) over user pairs, symmetrised; its
   rows (normalised) are clustered by k-means into kappa classes, kappa
   chosen among a few candidates to maximise the mean weight within classes
   over the mean weight between them (``clusters="auto"``, the paper's "we
   choose the number of clusters such that it optimizes the clustering
   objective"), or given.
   Regions never visited in training get no class.

Generation (:class:`SGLTSynthesizer`, Fig. 2 GenerateFake, sec. 4.1-4.4): per
fake user, a seed user among the training users kept as seeds; per day of
the fake, one day of that seed. The semantic seed replaces each seed location
by its class C'_i (each class member removed with probability ``par_c``, once
per fake), drops the seed's own location with probability ``par_l``, and
merges the neighbouring class across a class change Delta t slots away with
probability ``par_m ** Delta t``. The fake day is the randomised Viterbi path
on the aggregate model through those sets: every candidate's probability is
multiplied by a random factor in [1, ``par_v``]. Then the **privacy test**
(sec. 4.4): geographic similarity sim_G(fake, seed) <= ``par_s``, intersection
(share of the fake's events at locations the seed visited) <= ``par_i``, and
plausible deniability: at least k-1 alternative training traces s' (users not
used as seeds) with |sim_S(s, f) - sim_S(s', f)| < ``par_d``. Only fakes that
pass are released: a failing fake is dropped and drawn again (new seed, new
randomness) until the set is full, within ``max_tries`` x users draws, else
the generation fails (:class:`PrivacyTestError`). The aggregate model and the
semantic classes are learnt from the seed users only (Fig. 2: "over all u in
S"); the alternatives serve only the deniability test.

Where the paper is ambiguous, see ``synth/README.md`` ("Semantic fake traces").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces
from synth.common import (
    ContestDaySynthesizer,
    ModelFrame,
    as_days,
    grid_box,
    periods_of_slots,
    point_distances,
    read_npz,
    save_npz,
)
from synth.registry import Method, int_check, number_check, register, with_reason

METHOD = "sglt"
MODEL_VERSION = "tracecup-sglt-1"
GENERATOR_VERSION = "tracecup-sglt-gen-1"

#: Generation parameters and their defaults (the paper's sec. 5.3 values where it gives them;
#: k is not given: k = 2 is "at least one real trace outside the seeds").
GENERATION_DEFAULTS = dict(par_c=0.25, par_l=1.0, par_m=0.75, par_v=4.0, par_s=0.1, par_i=0.0, par_d=0.1,
                           k=2, max_tries=10, width=16, pd_candidates=50)
#: Training parameters and their defaults.
TRAINING_DEFAULTS = dict(periods=4, clusters="auto", partners=30, alt_fraction=0.5, eps=0.01)
#: kappa tried when ``clusters="auto"`` (the paper "chooses the number of clusters such that it
#: optimizes the clustering objective"; its 30 users gave 20).
KAPPA_CANDIDATES = (5, 10, 20, 40, 80)


# ---------------------------------------------------------------------------
# Mobility profiles and similarities
# ---------------------------------------------------------------------------
def visit_profiles(days: np.ndarray, M: int, period_of_slot: np.ndarray, P: int) -> np.ndarray:
    """(N, P, M) float64 pi_tau^r(u): share of user u's events of period tau spent in region r.

    ``days`` (N, D, S) regions or -1, ``period_of_slot`` (S,) the period of
    each column. A period without events is all zeros.
    """
    N = days.shape[0]
    u, _d, s = np.nonzero(days >= 0)
    key = (u * P + period_of_slot[s]) * M + days[u, _d, s]
    pi = np.bincount(key, minlength=N * P * M).reshape(N, P, M).astype(np.float64)
    tot = pi.sum(axis=2, keepdims=True)
    return np.divide(pi, tot, out=np.zeros_like(pi), where=tot > 0)


def semantic_similarity(pu: np.ndarray, pv: np.ndarray, w: np.ndarray):
    """Zeroth-order semantic similarity (eq. 10 as a similarity, one mapping sigma for all periods).

    Args:
        pu, pv: (P, M) visit profiles of u and v; w: (P,) period weights (sum 1).

    Returns:
        (sim, src, dst): sim = max_sigma sum_tau w_tau sum_r min(pu[tau, r], pv[tau, sigma(r)]),
        and the optimal mapping on the regions that carry weight (src regions of
        u mapped to dst regions of v, pairs of zero weight left out).
    """
    su = np.flatnonzero(pu.any(axis=0))
    sv = np.flatnonzero(pv.any(axis=0))
    if len(su) == 0 or len(sv) == 0:
        return 0.0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    W = np.einsum("p,pij->ij", w, np.minimum(pu[:, su, None], pv[:, None, sv]))
    from scipy.optimize import linear_sum_assignment  # local: a slow import only SGLT's training needs
    rows, cols = linear_sum_assignment(W, maximize=True)
    vals = W[rows, cols]
    keep = vals > 0
    return float(vals.sum()), su[rows[keep]], sv[cols[keep]]


def geographic_similarity(pu: np.ndarray, pv: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Zeroth-order geographic similarity with the Hamming distance (eq. 7 on pi only), batched.

    ``pu``, ``pv``: (..., P, M); returns (...,) sum_tau w_tau sum_r min(pu, pv):
    1 minus the Mallows distance of the visit distributions under d = 1[r != r'].
    """
    return np.einsum("p,...p->...", w, np.minimum(pu, pv).sum(axis=-1))


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------
@dataclass
class SGLTModel(ModelFrame):
    """A trained semantic fake-trace model.

    Attributes:
        seeds: (N, D, T) int32 training users' days (regions or -1), days with events first.
        seed_days: (N,) int64 days with events per user.
        alternative: (N,) bool, True for users kept out of the seeds (the
            plausible-deniability alternatives).
        classes: (M,) int64 semantic class of each region, -1 never visited.
        profiles: (N, P, M) float32 the training users' visit profiles pi(u).
        pi_bar: (P, M) float64 aggregate visit probability per period.
        p_bar: (P, M, M) float32 aggregate transition probabilities from a
            region in period tau to the next slot's region.
        period_of_slot: (T,) int64.
        nx, ny, slot_start_minute, slot_minutes, params, grid_box: the grid and slot clock (:class:`~synth.common.ModelFrame`).
    """

    seeds: np.ndarray
    seed_days: np.ndarray
    alternative: np.ndarray
    classes: np.ndarray
    profiles: np.ndarray
    pi_bar: np.ndarray
    p_bar: np.ndarray
    period_of_slot: np.ndarray
    method: str = METHOD
    version: str = MODEL_VERSION

    _ARRAYS = ("seeds", "seed_days", "alternative", "classes", "profiles", "pi_bar", "p_bar", "period_of_slot")

    @property
    def T(self) -> int:
        return self.seeds.shape[2]

    @property
    def P(self) -> int:
        return self.pi_bar.shape[0]

    @property
    def n_classes(self) -> int:
        return int(self.classes.max()) + 1 if (self.classes >= 0).any() else 0

    @property
    def period_weights(self) -> np.ndarray:
        return np.bincount(self.period_of_slot, minlength=self.P) / self.T

    def describe(self) -> dict:
        """Summary for the manifest."""
        return dict(self.frame_description(), classes=self.n_classes, params=self.params)

    def save(self, dest) -> None:
        save_npz(dest, self.frame_meta(), {k: getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, source) -> SGLTModel:
        meta, arrays = read_npz(source, METHOD, MODEL_VERSION, cls._ARRAYS)
        return cls(**arrays, **cls.frame_fields(meta))


def aggregate_transitions(days: np.ndarray, M: int, period_of_slot: np.ndarray, P: int,
                          dist_cells: np.ndarray, eps: float) -> np.ndarray:
    """(P, M, M) float32 p_bar: sum over users of their row-normalised transition matrices plus
    ``eps * max(1, d)^-2``, rows normalised (sec. 4.2)."""
    N, D, T = days.shape
    src, dst = days[:, :, :-1], days[:, :, 1:]
    ok = (src >= 0) & (dst >= 0)
    u = np.broadcast_to(np.arange(N)[:, None, None], src.shape)[ok].astype(np.int64)
    tau = np.broadcast_to(period_of_slot[:-1][None, None, :], src.shape)[ok]
    row = (u * P + tau) * M + src[ok]
    key = row * M + dst[ok]
    ukey, cnt = np.unique(key, return_counts=True)
    urow = ukey // M
    rows, rinv = np.unique(urow, return_inverse=True)
    row_tot = np.bincount(rinv, weights=cnt)
    prob = cnt / row_tot[rinv]                                        # each user's p_{r,tau}^{r'}(u)
    flat = ((urow // M) % P) * M * M + (urow % M) * M + ukey % M
    acc = np.bincount(flat, weights=prob, minlength=P * M * M).reshape(P, M, M)
    acc += eps * np.maximum(1.0, dist_cells)[None, :, :] ** -2
    acc /= acc.sum(axis=2, keepdims=True)
    return acc.astype(np.float32)


def semantic_graph(profiles: np.ndarray, w: np.ndarray, partners: int, rng: np.random.Generator,
                   M: int) -> tuple[np.ndarray, np.ndarray]:
    """(M, M) location semantic graph and the (pairs,) similarities computed.

    Each user u is paired with ``partners`` other users drawn at random (all
    others when ``partners >= N - 1``); every pair adds sim_S(u, v) to
    w_G(r, sigma_uv(r)) for the regions it maps (Fig. 2 SemanticClustering).
    The loop runs over user pairs: each pair is one linear assignment.
    """
    N = len(profiles)
    if N < 2:
        raise ValueError(f"semantic clustering needs at least 2 training users, got {N}")
    k = min(int(partners), N - 1)
    if k >= N - 1:
        us, vs = np.nonzero(~np.eye(N, dtype=bool))
    else:
        # k distinct partners per user, never the user herself.
        r = rng.random((N, N))
        r[np.arange(N), np.arange(N)] = np.inf
        vs = np.argsort(r, axis=1)[:, :k].ravel()
        us = np.repeat(np.arange(N), k)
    srcs, dsts, wts, sims = [], [], [], np.empty(len(us))
    for n, (u, v) in enumerate(zip(us, vs)):
        s, a, b = semantic_similarity(profiles[u], profiles[v], w)
        sims[n] = s
        srcs.append(a)
        dsts.append(b)
        wts.append(np.full(len(a), s))
    G = np.bincount(np.concatenate(srcs) * M + np.concatenate(dsts), weights=np.concatenate(wts),
                    minlength=M * M).reshape(M, M)
    return G + G.T, sims


def cluster_locations(G: np.ndarray, visited: np.ndarray, clusters: int, seed: int) -> np.ndarray:
    """(M,) class of each region by k-means on the normalised rows of the semantic graph; -1 unvisited.

    Classes are renumbered 0..C-1 in order of first region (empty k-means clusters vanish).
    """
    M = len(G)
    idx = np.flatnonzero(visited)
    out = np.full(M, -1, dtype=np.int64)
    if len(idx) == 0:
        return out
    X = G[np.ix_(idx, idx)]
    X = X / np.maximum(X.sum(axis=1, keepdims=True), 1e-300)
    k = max(1, min(int(clusters), len(idx)))
    from scipy.cluster.vq import kmeans2  # local: a slow import only SGLT's training needs
    _centroids, labels = kmeans2(X, k, seed=np.random.default_rng(seed), minit="++")
    _u, first, lab = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    out[idx] = rank[lab]
    return out


def clustering_quality(G: np.ndarray, visited: np.ndarray, classes: np.ndarray) -> float:
    """Mean semantic-graph weight between regions of the same class over the mean weight between regions of
    different classes (the visited regions only; higher = tighter classes). inf with a single class."""
    idx = np.flatnonzero(visited)
    X = G[np.ix_(idx, idx)]
    lab = classes[idx]
    same = lab[:, None] == lab[None, :]
    np.fill_diagonal(same, False)
    other = lab[:, None] != lab[None, :]
    if not other.any():
        return float("inf")
    return float(X[same].mean() / max(X[other].mean(), 1e-300)) if same.any() else 0.0


def choose_kappa(G: np.ndarray, visited: np.ndarray, seed: int,
                 candidates=KAPPA_CANDIDATES) -> tuple[int, np.ndarray, dict]:
    """(kappa, classes, {str(kappa): quality}): the candidate whose k-means classes maximise
    :func:`clustering_quality` (the paper's choice of kappa, sec. 4.1 and 5.2)."""
    n = int(visited.sum())
    tried = {}
    best = None
    for k in sorted({min(int(c), n) for c in candidates if c >= 2} or {1}):
        classes = cluster_locations(G, visited, k, seed)
        q = clustering_quality(G, visited, classes)
        tried[str(k)] = round(q, 6)                         # str keys: the model meta is JSON
        if best is None or q > best[0]:
            best = (q, k, classes)
    return best[1], best[2], tried


def train(traces: Traces, grid: Grid, *, slots_per_day: int = 20, periods: int = 4, clusters: int | str = "auto",
          partners: int = 30, alt_fraction: float = 0.5, eps: float = 0.01, slot_start_minute: float = 480.0,
          slot_minutes: float | None = None, seed: int | None = 0, progress=None) -> SGLTModel:
    """Fit the semantic fake-trace model (profiles, aggregate model, semantic classes) on training traces.

    ``clusters``: kappa, or ``"auto"`` to choose it among :data:`KAPPA_CANDIDATES` by
    :func:`choose_kappa` (the paper's way).
    """
    progress = progress or (lambda done, total, message: None)
    rng = np.random.default_rng(seed)
    M = grid.M
    reg = np.asarray(traces.regions)
    if reg.size and reg.max() >= M:
        raise ValueError(f"region index {int(reg.max())} is outside 0..{M - 1} (grid has {M} regions)")
    if not 0.0 <= alt_fraction < 1.0:
        raise ValueError(f"alt_fraction must be in [0, 1), got {alt_fraction}")
    T = int(slots_per_day)
    days, n_days = as_days(traces, T)
    N = len(days)
    if N < 2 or (n_days == 0).any():
        raise ValueError("training needs at least 2 users, each with at least one event")
    pos = periods_of_slots(T, periods)
    P = int(periods)
    w = np.bincount(pos, minlength=P) / T
    # The alternatives are chosen first: the paper's aggregate model and classes come from the seed
    # dataset S only (Fig. 2 GenerateFake); the alternatives only serve the deniability test.
    n_alt = int(np.floor(alt_fraction * N))
    alternative = np.zeros(N, dtype=bool)
    alternative[rng.permutation(N)[:n_alt]] = True
    seeds = ~alternative
    if seeds.sum() < 2:
        raise ValueError(f"training needs at least 2 seed users; alt_fraction {alt_fraction} of {N} leaves "
                         f"{int(seeds.sum())}")
    progress(0, 3, "mobility profiles")
    profiles = visit_profiles(days, M, pos, P)
    xy = grid.xy.astype(np.float64)
    dist = point_distances(xy[:, None, :], xy[None, :, :])
    p_bar = aggregate_transitions(days[seeds], M, pos, P, dist, eps)
    pi_bar = profiles[seeds].mean(axis=0)
    progress(1, 3, "semantic similarities")
    G, sims = semantic_graph(profiles[seeds], w, partners, rng, M)
    progress(2, 3, "semantic clustering")
    visited = profiles[seeds].any(axis=(0, 1))
    if clusters == "auto":
        kappa, classes, tried = choose_kappa(G, visited, int(rng.integers(2**31)))
    elif isinstance(clusters, (int, np.integer)) and not isinstance(clusters, bool) and clusters >= 1:
        kappa, tried = int(clusters), None
        classes = cluster_locations(G, visited, kappa, int(rng.integers(2**31)))
    else:
        raise ValueError(f"clusters must be an integer >= 1 or 'auto', got {clusters!r}")
    progress(3, 3, "done")
    params = dict(periods=P, clusters=kappa, clusters_tried=tried, partners=int(partners),
                  alt_fraction=float(alt_fraction),
                  eps=float(eps), seed=seed, slots_per_day=T, training_users=N,
                  semantic_similarity_mean=float(sims.mean()), pairs=len(sims))
    return SGLTModel(seeds=days, seed_days=n_days, alternative=alternative, classes=classes,
                     profiles=profiles.astype(np.float32), pi_bar=pi_bar, p_bar=p_bar, period_of_slot=pos,
                     nx=grid.nx, ny=grid.ny, slot_start_minute=float(slot_start_minute),
                     slot_minutes=float(600.0 / T if slot_minutes is None else slot_minutes), params=params,
                     grid_box=grid_box(grid))


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------
def randomized_viterbi(cand: np.ndarray, log_start: np.ndarray, log_trans, par_v: float,
                       rng: np.random.Generator) -> np.ndarray:
    """Most probable path through per-step candidate sets, each candidate's probability times U[1, par_v].

    Args:
        cand: (C, S, W) int64 candidate regions per chain and step, -1 = no candidate
            (every step must have one).
        log_start: (C, W) log-probability of the first step's candidates.
        log_trans: ``log_trans(s, prev (C, W), cur (C, W)) -> (C, W, W)`` log p(prev -> cur) into step s.
        par_v: upper end of the random factor (1 = plain Viterbi).

    Returns:
        (C, S) int64 chosen region per step.
    """
    C, S, W = cand.shape
    noise = (lambda: np.log(rng.uniform(1.0, par_v, size=(C, W))).astype(np.float32)) if par_v > 1 \
        else (lambda: np.float32(0.0))
    score = np.where(cand[:, 0] >= 0, log_start + noise(), -np.inf).astype(np.float32)
    back = np.empty((C, S, W), dtype=np.int16)
    for s in range(1, S):
        tot = score[:, :, None] + log_trans(s, cand[:, s - 1], cand[:, s])
        b = np.argmax(tot, axis=1)
        score = np.take_along_axis(tot, b[:, None, :], axis=1)[:, 0, :] + noise()
        score[cand[:, s] < 0] = -np.inf
        back[:, s] = b
    path = np.empty((C, S), dtype=np.int64)
    j = np.argmax(score, axis=1)
    rows = np.arange(C)
    for s in range(S - 1, -1, -1):
        path[:, s] = cand[rows, s, j]
        if s:
            j = back[rows, s, j]
    return path


class SGLTSynthesizer(ContestDaySynthesizer):
    """Fake traces of an :class:`SGLTModel` on the contest's day (see the module docstring).

    Args:
        model: the trained model.
        slots, slot_start_minute, slot_step_minutes: the contest day (slot q
            reads the seed at the model slot holding its clock time).
        par_c, par_l, par_m, par_v: semantic seed and Viterbi randomness (sec. 4.1-4.2).
        par_s, par_i, par_d, k: privacy test thresholds (sec. 4.4).
        max_tries: draws per fake on average: the set may take max_tries x users draws in
            all before the generation fails (a failing fake is never written).
        width: at most this many members of a class are candidates at a step
            (a random subset per fake, on top of par_c; bounds the Viterbi's W^2 work).
        pd_candidates: alternatives examined per fake for plausible deniability
            (a fake passes when k-1 of them qualify; examining fewer only rejects more).

    The options' types and bounds are the method's schema (registered below), checked once by
    :func:`synth.methods.make_synthesizer`; the class takes them as given.
    """

    def __init__(self, model: SGLTModel, *, slots: int = 20, slot_start_minute: float = 480,
                 slot_step_minutes: float = 30, **params):
        super().__init__(model, GENERATION_DEFAULTS, slots=slots, slot_start_minute=slot_start_minute,
                         slot_step_minutes=slot_step_minutes, params=params)
        self.period = model.period_of_slot[self.mslot]                      # (S,) period of each contest slot
        self.w = np.bincount(self.period, minlength=model.P) / self.S
        self.log_p = np.log(np.maximum(model.p_bar, 1e-30)).astype(np.float32).reshape(model.P, -1)
        self.log_pi = np.log(np.maximum(model.pi_bar, 1e-30))
        C = model.n_classes
        self.members = [np.flatnonzero(model.classes == c) for c in range(C)]
        size = max((len(m) for m in self.members), default=1)
        self.table = np.full((C + 1, size), -1, dtype=np.int64)               # row C: the empty class
        for c, m in enumerate(self.members):
            self.table[c, :len(m)] = m
        W = int(self.p["width"])
        # Fallback candidates where a semantic set ends up empty: the period's most visited regions.
        self.fallback = np.argsort(-model.pi_bar, axis=1)[:, :2 * W]
        self.seed_users = np.flatnonzero(~model.alternative)
        self.alt_users = np.flatnonzero(model.alternative)
        self.stats = {}
        self.batch = 512

    def options(self) -> dict:
        return dict(self.p)

    # -- semantic seeds ------------------------------------------------------
    def _class_lists(self, n: int, rng) -> np.ndarray:
        """(n, C+1, width) per fake: each class's members after removal with prob par_c, random order, capped."""
        C1, size = self.table.shape
        W = int(self.p["width"])
        keep = (self.table[None] >= 0) & (rng.random((n, C1, size)) >= float(self.p["par_c"]))
        key = np.where(keep, rng.random((n, C1, size)), np.inf)
        order = np.argsort(key, axis=2)[:, :, :W]
        lists = np.take_along_axis(np.broadcast_to(self.table, (n, C1, size)), order, axis=2)
        kept = np.take_along_axis(keep, order, axis=2)
        lists = np.where(kept, lists, -1)
        if lists.shape[2] < W:
            lists = np.concatenate([lists, np.full((n, C1, W - lists.shape[2]), -1, np.int64)], axis=2)
        return lists

    def _seed_days(self, seeds: np.ndarray, n_days: int, rng) -> np.ndarray:
        """(n, n_days, S) the seed's location at each contest slot, one random seed day per fake day.

        A slot without a seed event takes the previous slot's location (the next one at the day's start).
        """
        m = self.model
        d = np.floor(rng.random((len(seeds), n_days)) * m.seed_days[seeds][:, None]).astype(np.int64)
        seq = m.seeds[seeds[:, None], d][:, :, self.mslot].astype(np.int64)    # (n, n_days, S)
        S = self.S
        idx = np.where(seq >= 0, np.arange(S), -1)
        np.maximum.accumulate(idx, axis=2, out=idx)                          # last valid at or before s
        first = np.argmax(seq >= 0, axis=2)                                  # first valid slot of the day
        idx = np.where(idx < 0, first[:, :, None], idx)
        return np.take_along_axis(seq, idx, axis=2)

    def _candidates(self, seq: np.ndarray, rng) -> np.ndarray:
        """(n, n_days, S, 2*width) candidate regions of the semantic seeds of fakes with seed days ``seq``."""
        n, D, S = seq.shape
        C = len(self.members)
        lists = self._class_lists(n, rng)
        cls = self.model.classes[seq]
        cls = np.where(cls < 0, C, cls)
        # Distance to the nearest class change in the day (previous or next) and the class there.
        s_idx = np.arange(S)
        change = np.concatenate([np.zeros((n, D, 1), bool), cls[:, :, 1:] != cls[:, :, :-1]], axis=2)
        prev_change = np.where(change, s_idx, -1)
        np.maximum.accumulate(prev_change, axis=2, out=prev_change)          # first slot of the current run
        nxt = np.where(np.concatenate([cls[:, :, 1:] != cls[:, :, :-1], np.zeros((n, D, 1), bool)], axis=2),
                       s_idx, S)
        nxt = np.flip(np.minimum.accumulate(np.flip(nxt, axis=2), axis=2), axis=2)  # last slot of the run
        d_prev = np.where(prev_change > 0, s_idx - prev_change + 1, S + 1)  # slots to the previous class
        d_next = np.where(nxt < S - 1, nxt - s_idx + 1, S + 1)             # slots to the next class
        use_prev = d_prev <= d_next
        dt = np.where(use_prev, d_prev, d_next)
        other_at = np.where(use_prev, np.maximum(prev_change - 1, 0), np.minimum(nxt + 1, S - 1))
        other = np.take_along_axis(cls, other_at, axis=2)
        merge = (dt <= S) & (rng.random((n, D, S)) < float(self.p["par_m"]) ** np.minimum(dt, S + 1))
        f = np.arange(n)[:, None, None]
        primary = lists[f, cls]                                              # (n, D, S, W)
        merged = np.where(merge[..., None], lists[f, np.where(merge, other, C)], -1)
        cand = np.concatenate([primary, merged], axis=3)
        drop = rng.random((n, D, S)) < float(self.p["par_l"])
        cand[(cand == seq[..., None]) & drop[..., None]] = -1
        empty = ~(cand >= 0).any(axis=3)
        if empty.any():
            fb = self.fallback[self.period]                                  # (S, 2W)
            cand[empty] = np.broadcast_to(fb[None, None], (n, D) + fb.shape)[empty]
        return cand

    def _decode(self, cand: np.ndarray, rng) -> np.ndarray:
        n, D, S, W = cand.shape
        flat = cand.reshape(n * D, S, W)
        out = np.empty((n * D, S), dtype=np.int64)
        step = max(1, (1 << 24) // max(1, W * W))
        for lo in range(0, n * D, step):
            c = flat[lo:lo + step]
            start = self.log_pi[self.period[0]][np.maximum(c[:, 0], 0)]

            def log_trans(s, prev, cur, M=self.model.M):
                # One flat gather from the period's (M*M,) row-major log p_bar.
                return np.take(self.log_p[self.period[s - 1]],
                               np.maximum(prev, 0)[:, :, None] * M + np.maximum(cur, 0)[:, None, :])

            out[lo:lo + step] = randomized_viterbi(c, start, log_trans, float(self.p["par_v"]), rng)
        return out.reshape(n, D, S)

    # -- privacy test ---------------------------------------------------------
    def fake_profiles(self, fakes: np.ndarray) -> np.ndarray:
        """(n, P, M) visit profiles of fakes (n, n_days, S) on the contest slots' periods."""
        n, D, S = fakes.shape
        P, M = self.model.P, self.model.M
        key = (np.arange(n)[:, None, None] * P + self.period[None, None, :]) * M + fakes
        pi = np.bincount(key.ravel(), minlength=n * P * M).reshape(n, P, M).astype(np.float64)
        tot = pi.sum(axis=2, keepdims=True)
        return np.divide(pi, tot, out=np.zeros_like(pi), where=tot > 0)

    def privacy_test(self, fakes: np.ndarray, seeds: np.ndarray, seq: np.ndarray, rng) -> dict:
        """The sec. 4.4 tests of each fake against its seed.

        Args:
            fakes: (n, n_days, S) fake regions; seeds: (n,) seed users; seq: the seed
                locations at the same slots (what the fakes were decoded from; not used by the tests).

        Returns:
            dict of (n,) arrays: ``sim_g``, ``intersection`` (share of the fake's events at
            locations the seed visited), ``alternatives`` (qualifying alternatives found, at most
            k-1 are looked for), ``geo_ok``, ``int_ok``, ``pd_tested`` (deniability examined: only
            fakes passing the other two), ``pd_ok``, ``accept``.
        """
        m = self.model
        pf = self.fake_profiles(fakes)
        ps = m.profiles[seeds].astype(np.float64)
        sim_g = np.einsum("p,np->n", self.w, np.minimum(pf, ps).sum(axis=2))
        # Intersection (sec. 4.4): share of the fake's events at a location its seed visited (any period,
        # any training day of the seed): "the exact locations visited by the individual are not present".
        visited = ps.any(axis=1)                                             # (n, M)
        inter = np.take_along_axis(visited, fakes.reshape(len(fakes), -1).astype(np.int64), axis=1).mean(axis=1)
        need = int(self.p["k"]) - 1
        found = np.zeros(len(fakes), dtype=np.int64)
        par_d = float(self.p["par_d"])
        geo_ok = sim_g <= float(self.p["par_s"])
        int_ok = inter <= float(self.p["par_i"])
        if need > 0:
            alts = self.alt_users
            limit = min(int(self.p["pd_candidates"]), len(alts))
            # Only fakes that pass the other tests need the (per pair) assignment work.
            for i in np.flatnonzero(geo_ok & int_ok):
                s_own, _, _ = semantic_similarity(ps[i], pf[i], self.w)
                for a in rng.permutation(alts)[:limit]:
                    s_alt, _, _ = semantic_similarity(m.profiles[a].astype(np.float64), pf[i], self.w)
                    if abs(s_own - s_alt) < par_d:
                        found[i] += 1
                        if found[i] >= need:
                            break
        pd_tested = geo_ok & int_ok
        pd_ok = pd_tested & (found >= need)
        return dict(sim_g=sim_g, intersection=inter, alternatives=found, geo_ok=geo_ok, int_ok=int_ok,
                    pd_tested=pd_tested, pd_ok=pd_ok, accept=geo_ok & int_ok & pd_ok)

    # -- sets -------------------------------------------------------------------
    def sample_set(self, users: int, n_days: int, rng: np.random.Generator, progress=None) -> np.ndarray:
        """(users, n_days, S) int32 fake regions, every one of which passed the privacy test.

        Fakes failing the test are dropped and drawn again from a new seed
        (Fig. 2 releases only fakes that pass) until the set is full; at most
        ``max_tries`` x ``users`` draws in all, after which the generation
        fails with :class:`PrivacyTestError` (which test failed how often,
        which parameter to relax). ``self.stats``: users, draws, dropped, and
        per test the draws it rejected (deniability counts only the draws it
        examined: those passing the other two tests).
        """
        if len(self.seed_users) == 0:
            raise ValueError("the model has no seed users (alt_fraction left none)")
        if int(self.p["k"]) > 1 and len(self.alt_users) < int(self.p["k"]) - 1:
            raise ValueError(f"plausible deniability with k={self.p['k']} needs {int(self.p['k']) - 1} "
                             f"alternative users; the model has {len(self.alt_users)}")
        out = np.empty((users, n_days, self.S), dtype=np.int32)
        self.seed_of = np.full(users, -1, dtype=np.int64)         # each fake's seed (tests; never written)
        todo = np.arange(users)
        budget = int(self.p["max_tries"]) * users
        counts = dict(draws=0, failing_geo=0, failing_intersection=0, deniability_tested=0, failing_deniability=0)
        while len(todo) and counts["draws"] < budget:
            now, later = todo[:budget - counts["draws"]], todo[budget - counts["draws"]:]
            failed = []
            for lo in range(0, len(now), self.batch):                      # bounded memory per batch
                idx = now[lo:lo + self.batch]
                seeds = rng.choice(self.seed_users, size=len(idx))
                seq = self._seed_days(seeds, n_days, rng)
                fakes = self._decode(self._candidates(seq, rng), rng)
                test = self.privacy_test(fakes, seeds, seq, rng)
                ok = test["accept"]
                out[idx[ok]] = fakes[ok]                                    # only fakes that pass are kept
                self.seed_of[idx[ok]] = seeds[ok]
                failed.append(idx[~ok])
                counts["draws"] += len(idx)
                counts["failing_geo"] += int((~test["geo_ok"]).sum())
                counts["failing_intersection"] += int((~test["int_ok"]).sum())
                counts["deniability_tested"] += int(test["pd_tested"].sum())
                counts["failing_deniability"] += int((test["pd_tested"] & ~test["pd_ok"]).sum())
            todo = np.concatenate(failed + [later])
            if progress:
                progress(users - len(todo), users, f"fakes accepted after {counts['draws']} draws")
        self.stats = dict(users=users, **counts, dropped=counts["draws"] - (users - len(todo)), failing=0)
        if len(todo):
            raise PrivacyTestError(self._failure_message(users, len(todo), counts))
        return out

    def _failure_message(self, users: int, missing: int, counts: dict) -> str:
        """Which test rejected how many draws, and which parameter relaxes it."""
        p = self.p
        draws = counts["draws"]
        parts = [f"geographic similarity > par_s = {p['par_s']}: {counts['failing_geo']} of {draws} draws",
                 f"intersection with the seed's locations > par_i = {p['par_i']}: {counts['failing_intersection']} "
                 f"of {draws}",
                 f"plausible deniability (fewer than k-1 = {int(p['k']) - 1} alternatives within par_d = "
                 f"{p['par_d']}): {counts['failing_deniability']} of the {counts['deniability_tested']} examined"]
        worst = max(("par_s", counts["failing_geo"]), ("par_i", counts["failing_intersection"]),
                    ("par_d or k", counts["failing_deniability"]), key=lambda kv: kv[1])[0]
        # The action first: a job's message keeps only its first 300 characters.
        return (f"sglt: {missing} of {users} fakes still fail the privacy test after {draws} draws; relax {worst} "
                f"(or raise max_tries = {p['max_tries']}): a failing fake is never written. Rejected by "
                f"{'; '.join(parts)}.")


class PrivacyTestError(ValueError):
    """The set could not be filled with fakes that pass the privacy test within the draw budget."""


register(Method(
    name=METHOD,
    title="semantic fake traces with privacy tests (seed 002, Bindschaedler and Shokri)",
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
                                                             "with it")},
    train=train, synthesizer=SGLTSynthesizer, load=SGLTModel.load,
    generator="SGLT", generator_version=GENERATOR_VERSION, describe=SGLTModel.describe))
