"""Co-location-aware traces with differential privacy (seed 003: Narita et al., "Synthesizing
Privacy-Preserving Location Traces Including Co-locations", DPM 2021).

Training (:func:`train`, sec. 4.2-4.3 and the TPM of sec. 5.3):

1. **Friendship probability** p = share of friend pairs among the n(n-1)
   ordered user pairs; p' = p + Lap(2 / (n_min eps1)) (node DP, Proposition 1:
   adding or removing one user changes p by at most 2/n <= 2/n_min), clipped
   to [0, 1] (post-processing). n_min (``min_users``) is a *public* lower
   bound on the number of training users: the noise scale must not depend on
   the data (the data-dependent 2/n of the paper lets the privacy loss reach
   about 1.5 eps1 between neighbours of n and n-1 users). Training refuses
   fewer than n_min users. The friendship graph is given (``friends``, pairs
   of training users) or, when the training data has none (the built-in
   city), inferred from the traces: two users are friends when they share a
   region at ``min_meetings`` time instants or more. Then p' is computed from
   the traces and its eps1 is spent on them too (the ledger says so).
2. **Co-location count matrix** Q (T x M): at ``c`` *public* instants (spread
   over the training days and slots of the day, the same for every user:
   :func:`read_instants`), each co-location site, a region where two friends
   are at that instant, adds 1 to Q[t, x] (t the instant's slot of the day).
   A user is at one region per instant, so adding or removing her (or her
   friendships) changes at most one site per read instant: the L1
   sensitivity of Q is c whatever the other users do. This replaces the
   paper's per-user trimming ("read a user's co-locations until she reaches
   c"), whose bound does not hold under removal: removing a user frees her
   friends' later co-locations, which then get read, so the change grows
   with her number of friends ((K + 1) c). Q' = Q + Lap(c / eps2) per
   element (``mechanism="laplace"``, Proposition 2), or **Privelet** for
   nominal data over a location hierarchy (``mechanism="wavelet"``): each
   row's nominal wavelet coefficients get Lap(lambda / W(coef)) with
   W(base) = 1, W(coef of a child of an f-child node) = f / (2f - 2), and
   lambda = h c / eps2 (h = levels of the hierarchy, the transform's
   generalized sensitivity; Xiao et al. 2010). With a given friendship
   graph, Q also reads the graph, and its eps2 is charged to the graph too.
3. **Transition model** (TPM, the synthesizer of the paper's ref. [22] used in
   its experiments): each user's transitions trimmed to ``c_trans`` at random
   (keys drawn from the user's own id and time ids, so one user's selection
   never depends on another's),
   counts + Lap(c_trans / eps3) per cell, negatives to 0, each row's
   ``successors`` largest kept (post-processing), rows normalised; start
   distribution = its stationary distribution.

Generation (:class:`ColocSynthesizer`, sec. 4.4): an Erdos-Renyi graph G'
over the set's users with edge probability p' (the **friendship graph**,
part of the output); R' = rows of Q' shifted to non-negative and
normalised; ``theta`` co-location events planted: a random pair of friends,
a random time instant, a region drawn from R' at that instant's slot, reusing
a location already planted for either user at that instant; then every day
is filled: days with planted events by the **constrained Viterbi** path of
the TPM through the planted points (randomised as seed 002's Viterbi: each
candidate's probability times U[1, ``par_v``]), days without by sampling the
TPM from its stationary distribution.

**Privacy budget** (:meth:`ColocModel.ledger`): every mechanism with its data,
notion, epsilon, sensitivity and noise scale, and the totals per data set by
sequential composition. The paper's TPM spends eps2 on the same traces as Q',
so the traces' budget is eps2 + eps3 (2 eps2 with the paper's setting), not
the eps2 the paper's sec. 3.4 counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces
from synth.common import ContestDaySynthesizer, ModelFrame, grid_box, read_npz, save_npz
from synth.registry import Method, choice_check, int_check, number_check, register, with_reason

METHOD = "coloc"
MODEL_VERSION = "tracecup-coloc-1"
GENERATOR_VERSION = "tracecup-coloc-gen-1"

TRAINING_DEFAULTS = dict(eps1=1.0, eps2=1.0, eps3=1.0, c=5, c_trans=5, mechanism="laplace", hierarchy="blocks",
                         successors=16, min_meetings=3, min_users=100)
GENERATION_DEFAULTS = dict(theta=200, par_v=4.0, max_rounds=200)
MECHANISMS = ("laplace", "wavelet")
#: Transitions outside a row's kept successors have this probability in the Viterbi fill
#: (keeps every planted point reachable without a dense matrix).
FLOOR = 1e-9


# ---------------------------------------------------------------------------
# Friendship probability (sec. 4.2)
# ---------------------------------------------------------------------------
def friendship_probability(n: int, edges: np.ndarray) -> float:
    """p: share of ordered user pairs that are friends (2 |E| / (n (n - 1))); ``edges`` (E, 2) undirected."""
    if n < 2:
        return 0.0
    return 2.0 * len(edges) / (n * (n - 1))


def friendship_sensitivity(min_users: int) -> float:
    """Node-DP sensitivity of p over training sets of at least ``min_users`` users: 2 / min_users.

    Adding or removing one user of a set of n users changes p by at most 2/n
    (Proposition 1; a star or a clique around the user reaches it).
    """
    return 2.0 / min_users


def friendship_scale(min_users: int, eps1: float) -> float:
    """Laplace scale of p': the sensitivity 2 / min_users over eps1 (a public bound, never the data's n)."""
    return friendship_sensitivity(min_users) / eps1


def noisy_friendship_probability(n: int, edges: np.ndarray, eps1: float, rng: np.random.Generator,
                                 min_users: int | None = None) -> float:
    """p' = p + Lap(2 / (min_users eps1)), clipped to [0, 1]; ``min_users`` defaults to n (tests only)."""
    scale = friendship_scale(n if min_users is None else min_users, eps1)
    return float(np.clip(friendship_probability(n, edges) + rng.laplace(0.0, scale), 0.0, 1.0))


def _undirected(edges: np.ndarray, n: int) -> np.ndarray:
    """(E, 2) int64 distinct undirected pairs (i < j), self loops dropped."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(e) and (e.min() < 0 or e.max() >= n):
        raise ValueError(f"friendship pair outside the {n} training users")
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0) if len(e) else e


# ---------------------------------------------------------------------------
# Co-locations (sec. 4.3)
# ---------------------------------------------------------------------------
def colocations(regions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of users in the same region at the same column of ``regions`` (n, L) (-1 = none).

    Returns (u, v, col, region) int64 arrays with u < v, sorted by column.
    """
    n, L = regions.shape
    uu, cc = np.nonzero(regions >= 0)
    key = cc.astype(np.int64) * (int(regions.max(initial=0)) + 1) + regions[uu, cc]
    order = np.lexsort((uu, key))
    key, uu, cc = key[order], uu[order], cc[order]
    end = np.searchsorted(key, key, side="right")
    after = end - np.arange(len(key)) - 1                        # later members of the same group
    first = np.repeat(np.arange(len(key)), after)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(after) - after, after)
    second = first + 1 + offset
    u, v, col = uu[first], uu[second], cc[first]
    return u.astype(np.int64), v.astype(np.int64), col.astype(np.int64), regions[u, col].astype(np.int64)


def infer_friends(regions: np.ndarray, min_meetings: int) -> np.ndarray:
    """(E, 2) pairs of users sharing a region at ``min_meetings`` or more columns (time instants)."""
    n = regions.shape[0]
    u, v, _c, _x = colocations(regions)
    keys, count = np.unique(u * n + v, return_counts=True)
    keys = keys[count >= min_meetings]
    return np.stack([keys // n, keys % n], axis=1)


def friend_colocations(regions: np.ndarray, edges: np.ndarray):
    """(u, v, col, region) of the co-locations between friends (``edges`` (E, 2), i < j), by column."""
    n = regions.shape[0]
    u, v, col, x = colocations(regions)
    ek = np.sort(edges[:, 0] * n + edges[:, 1]) if len(edges) else np.zeros(0, np.int64)
    k = u * n + v
    pos = np.minimum(np.searchsorted(ek, k), max(len(ek) - 1, 0))
    hit = (ek[pos] == k) if len(ek) else np.zeros(len(k), bool)
    return u[hit], v[hit], col[hit], x[hit]


def read_instants(time_ids: np.ndarray, slots_per_day: int, c: int) -> np.ndarray:
    """(k,) ascending column indexes of the ``c`` public instants at which co-locations are read (k <= c).

    Instant i (0 <= i < c) is slot ``i % T`` of the training day
    ``floor(i D / c)`` (D = the days of the time axis): every slot of the
    day is read before any is read twice, and the instants spread over the
    days. They depend only on the time axis, which every user shares, so
    they are the same for every user and for every neighbouring training
    set. An instant missing from the axis is not read.
    """
    tid = np.asarray(time_ids, dtype=np.int64)
    T = int(slots_per_day)
    day, slot = (tid - 1) // T, (tid - 1) % T
    days = np.unique(day)
    k = int(min(c, len(days) * T))
    i = np.arange(k)
    want = days[(i * len(days)) // k] * T + i % T if k else np.zeros(0, np.int64)
    key = day * T + slot                                              # ascending with the time ids
    pos = np.minimum(np.searchsorted(key, want), max(len(key) - 1, 0))
    return np.unique(pos[key[pos] == want]) if len(key) else np.zeros(0, np.int64)


def colocation_sites(regions: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(col, region) int64: the distinct (column, region) where at least one pair of friends is together.

    ``regions`` (n, L) region or -1; ``edges`` (E, 2) friend pairs i < j.
    """
    _u, _v, col, x = friend_colocations(regions, edges)
    if len(col) == 0:
        return col, x
    key = np.unique(col * (int(x.max()) + 1) + x)
    return key // (int(x.max()) + 1), key % (int(x.max()) + 1)


def colocation_counts(regions: np.ndarray, edges: np.ndarray, read: np.ndarray, slot_of_col: np.ndarray,
                      T: int, M: int) -> np.ndarray:
    """(T, M) Q: per slot of the day and region, the co-location sites at the read instants ``read``.

    ``regions`` (n, L) all instants, ``read`` (k,) column indexes (:func:`read_instants`),
    ``slot_of_col`` (L,). L1 sensitivity k <= c under adding or removing a user or her friendships.
    """
    col, x = colocation_sites(regions[:, read], edges)
    return np.bincount(slot_of_col[read][col] * M + x, minlength=T * M).reshape(T, M).astype(np.float64)


# ---------------------------------------------------------------------------
# Privelet for nominal data over a location hierarchy
# ---------------------------------------------------------------------------
def block_hierarchy(grid: Grid, sizes=(4, 16)) -> list[np.ndarray]:
    """Levels of a spatial hierarchy: for each block size (coarsest last in ``sizes``), the block of every region.

    Returned top-down (coarsest first), without the root and the leaves.
    """
    xy = grid.xy
    levels = []
    for b in sorted(sizes, reverse=True):
        nbx = -(-grid.nx // b)
        levels.append((xy[:, 1] // b) * nbx + xy[:, 0] // b)
    return [np.unique(lv, return_inverse=True)[1].astype(np.int64) for lv in levels]


def category_hierarchy(categories: np.ndarray) -> list[np.ndarray]:
    """One level: each region's category (any integer labels) under the root."""
    return [np.unique(np.asarray(categories), return_inverse=True)[1].astype(np.int64)]


@dataclass(frozen=True)
class Hierarchy:
    """A tree over M leaves: ``levels[l]`` (M,) node of each leaf at level l+1 (root = level 0), leaves last."""

    levels: tuple

    @classmethod
    def of(cls, levels: list[np.ndarray], M: int) -> Hierarchy:
        return cls(tuple(np.asarray(lv, dtype=np.int64) for lv in levels) + (np.arange(M, dtype=np.int64),))

    @property
    def height(self) -> int:
        """Levels including the root and the leaves (the nominal transform's generalized sensitivity)."""
        return len(self.levels) + 1

    def _parents(self):
        """Per level below the root: (node -> parent node at the level above) and fan-out of each parent."""
        out = []
        prev = np.zeros(len(self.levels[0]), dtype=np.int64)
        for lv in self.levels:
            nodes = int(lv.max()) + 1
            parent = np.zeros(nodes, dtype=np.int64)
            parent[lv] = prev
            fan = np.bincount(parent, minlength=int(prev.max()) + 1)
            out.append((parent, fan))
            prev = lv
        return out

    def transform(self, Q: np.ndarray) -> list[np.ndarray]:
        """Nominal wavelet coefficients of every row of Q (R, M): [base (R, 1), level 1 (R, n1), ...].

        Base = row total; a node v's coefficient = s_v - s_parent / fan(parent).
        """
        R = Q.shape[0]
        coefs = [Q.sum(axis=1, keepdims=True)]
        prev_s = coefs[0]
        for lv, (parent, fan) in zip(self.levels, self._parents()):
            nodes = len(parent)
            s = np.zeros((R, nodes))
            np.add.at(s, (slice(None), lv), Q)
            coefs.append(s - prev_s[:, parent] / fan[parent])
            prev_s = s
        return coefs

    def inverse(self, coefs: list[np.ndarray]) -> np.ndarray:
        """Rows from coefficients: s_v = c_v + s_parent / fan(parent), top-down; the leaves' s."""
        s = coefs[0]
        for c, (parent, fan) in zip(coefs[1:], self._parents()):
            s = c + s[:, parent] / fan[parent]
        return s

    def weights(self) -> list[np.ndarray]:
        """W of every coefficient: 1 for the base, f / (2f - 2) for a child of an f-child node (inf if f = 1:
        such a coefficient is always 0 and gets no noise)."""
        out = [np.ones(1)]
        for parent, fan in self._parents():
            f = fan[parent].astype(np.float64)
            out.append(np.divide(f, 2 * f - 2, out=np.full(len(f), np.inf), where=f > 1))
        return out


    def add_noise(self, coefs: list[np.ndarray], scale: float, rng: np.random.Generator) -> list[np.ndarray]:
        """Coefficients plus Lap(scale / W) each (no noise where W is infinite)."""
        noisy = []
        for c, w in zip(coefs, self.weights()):
            b = np.where(np.isinf(w), 0.0, scale / np.where(np.isinf(w), 1.0, w))
            noisy.append(c + rng.laplace(0.0, 1.0, size=c.shape) * b[None, :])
        return noisy

    def mean_subtract(self, coefs: list[np.ndarray]) -> list[np.ndarray]:
        """Privelet's refinement of noisy coefficients: each node's coefficient minus its siblings' mean,
        so siblings' coefficients sum to 0 as in an exact transform (post-processing)."""
        out = [coefs[0]]
        for c, (parent, fan) in zip(coefs[1:], self._parents()):
            sums = np.zeros((c.shape[0], len(fan)))
            np.add.at(sums, (slice(None), parent), c)
            out.append(c - sums[:, parent] / fan[parent])
        return out


def privelet(Q: np.ndarray, hierarchy: Hierarchy, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Q' by Privelet: coefficient noise Lap(scale / W), mean subtraction, inverse transform.

    ``scale`` = lambda = h * sensitivity / eps.
    """
    noisy = hierarchy.add_noise(hierarchy.transform(Q), scale, rng)
    return hierarchy.inverse(hierarchy.mean_subtract(noisy))


# ---------------------------------------------------------------------------
# Transition model
# ---------------------------------------------------------------------------
def _keyed_uniform(salt: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) float64 in [0, 1) from the integers (salt, a, b) by SplitMix64: a random key that depends on
    nothing but its own inputs (vectorised; used so one user's trimming never depends on another's data)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(salt) + np.asarray(a).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + np.asarray(b).astype(np.uint64) * np.uint64(0xD1B54A32D192ED03))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def user_transitions(traces: Traces, slots_per_day: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(user row, source time id, src region, dst region) of every transition between consecutive slots of
    the same day (time ids t and t+1, both with an event), int64 arrays."""
    tid = np.asarray(traces.time_ids, dtype=np.int64)
    T = int(slots_per_day)
    nxt = np.flatnonzero((tid[1:] == tid[:-1] + 1) & ((tid[1:] - 1) // T == (tid[:-1] - 1) // T))
    reg = np.asarray(traces.regions)
    src, dst = reg[:, nxt], reg[:, nxt + 1]
    ok = (src >= 0) & (dst >= 0)
    user, j = np.nonzero(ok)
    return user.astype(np.int64), tid[nxt][j], src[ok].astype(np.int64), dst[ok].astype(np.int64)


def transition_counts(traces: Traces, slots_per_day: int, M: int, c_trans: int, salt: int) -> np.ndarray:
    """(M, M) transition counts, each user's transitions trimmed to ``c_trans`` at random.

    A transition's random key comes from (salt, user id, time id) only, so
    the transitions a user keeps depend on her own trace: adding or removing
    a user changes the counts by at most c_trans in L1.
    """
    user, t, src, dst = user_transitions(traces, slots_per_day)
    uid = np.asarray(traces.user_ids, dtype=np.int64)[user]
    order = np.lexsort((_keyed_uniform(salt, uid, t), user))
    rank = np.arange(len(user)) - np.searchsorted(user[order], user[order], side="left")
    keep = np.empty(len(user), dtype=bool)
    keep[order] = rank < int(c_trans)
    return np.bincount(src[keep] * M + dst[keep], minlength=M * M).reshape(M, M).astype(np.float64)


def noisy_transitions(counts: np.ndarray, c_trans: int, eps3: float, successors: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(succ (M, k) int64, prob (M, k) float64): each row's kept successors of the DP transition counts.

    ``counts`` (M, M) from :func:`transition_counts`, + Lap(c_trans / eps3)
    per cell, negatives to 0, the ``successors`` largest per row kept, rows
    normalised (an all-zero row stays in place).
    """
    M = len(counts)
    noisy = counts + rng.laplace(0.0, c_trans / eps3, size=(M, M))
    np.maximum(noisy, 0.0, out=noisy)
    k = min(int(successors), M)
    succ = np.argpartition(-noisy, k - 1, axis=1)[:, :k]
    prob = np.take_along_axis(noisy, succ, axis=1)
    tot = prob.sum(axis=1, keepdims=True)
    empty = tot[:, 0] <= 0
    prob[empty] = 0.0
    succ[empty, 0] = np.flatnonzero(empty)
    prob[empty, 0] = 1.0
    return succ.astype(np.int64), prob / prob.sum(axis=1, keepdims=True)


def stationary(succ: np.ndarray, prob: np.ndarray, iters: int = 500) -> np.ndarray:
    """(M,) stationary distribution of the sparse chain by power iteration from uniform (lazy chain)."""
    M = len(succ)
    pi = np.full(M, 1.0 / M)
    for _ in range(iters):
        nxt = np.bincount(succ.ravel(), weights=(pi[:, None] * prob).ravel(), minlength=M)
        pi = 0.5 * pi + 0.5 * nxt
    return pi / pi.sum()


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------
@dataclass
class ColocModel(ModelFrame):
    """A trained co-location model: p', Q', the DP transition model, and the privacy ledger.

    Attributes:
        p_friend: p' the noisy friendship probability.
        Q: (T, M) float64 Q' the noisy co-location counts per slot of the day and region.
        succ, prob: (M, k) the transition model's kept successors and probabilities.
        start: (M,) the transition model's stationary distribution.
        ledger_entries: JSON list of the mechanisms (see :meth:`ledger`).
    """

    p_friend: float
    Q: np.ndarray
    succ: np.ndarray
    prob: np.ndarray
    start: np.ndarray
    ledger_entries: list = field(default_factory=list)
    method: str = METHOD
    version: str = MODEL_VERSION
    #: Exact statistics of the training data after :func:`train` (organizer only; never saved or described).
    training_stats: dict | None = field(default=None, compare=False, repr=False)

    _ARRAYS = ("Q", "succ", "prob", "start")

    @property
    def T(self) -> int:
        return self.Q.shape[0]

    def ledger(self) -> dict:
        """The privacy budget: mechanisms and the totals per data set and per user (sequential composition)."""
        totals = {}
        for e in self.ledger_entries:
            for data in ([e["data"]] if isinstance(e["data"], str) else e["data"]):
                totals[data] = round(totals.get(data, 0.0) + e["epsilon"], 12)
        return dict(mechanisms=self.ledger_entries, totals=totals,
                    per_user=round(sum(e["epsilon"] for e in self.ledger_entries), 12),
                    note="sequential composition; generating more sets from the model spends nothing more "
                         "(post-processing); training again on the same traces spends it again")

    def describe(self) -> dict:
        return dict(self.frame_description(), p_friend=self.p_friend, params=self.params, privacy=self.ledger())

    def save(self, dest) -> None:
        meta = dict(self.frame_meta(), p_friend=self.p_friend, ledger=self.ledger_entries)
        save_npz(dest, meta, {k: getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, source) -> ColocModel:
        meta, arrays = read_npz(source, METHOD, MODEL_VERSION, cls._ARRAYS)
        return cls(**arrays, **cls.frame_fields(meta), p_friend=float(meta["p_friend"]),
                   ledger_entries=meta["ledger"])


def exact_statistics(traces: Traces, grid: Grid, *, slots_per_day: int, friends: np.ndarray | None = None,
                     c: int = 5, c_trans: int = 5, min_meetings: int = 3, salt: int = 0) -> dict:
    """The statistics the mechanisms noise, before any noise (the privacy audit compares them between
    neighbouring training sets; never released).

    Returns dict: ``n`` users, ``edges`` (E, 2) friend pairs (rows of ``traces``), ``p`` (float),
    ``Q`` (T, M) co-location sites at the read instants, ``transitions`` (M, M) trimmed counts,
    ``read`` (k,) the read instants' columns.
    """
    T, M = int(slots_per_day), grid.M
    regions = np.asarray(traces.regions)
    n = traces.m
    edges = infer_friends(regions, min_meetings) if friends is None else _undirected(friends, n)
    tid = np.asarray(traces.time_ids, dtype=np.int64)
    read = read_instants(tid, T, c)
    Q = colocation_counts(regions, edges, read, (tid - 1) % T, T, M)
    return dict(n=n, edges=edges, p=friendship_probability(n, edges), Q=Q, read=read,
                transitions=transition_counts(traces, T, M, c_trans, salt))


def _check_training(traces: Traces, grid: Grid, *, eps: tuple[float, float, float], mechanism: str, c: int,
                    c_trans: int, min_users: int) -> None:
    """:func:`train`'s parameters and traces in their bounds, else a ValueError saying which and why."""
    for name, value in zip(("eps1", "eps2", "eps3"), eps, strict=True):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value}")
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism {mechanism!r}: expected one of {', '.join(MECHANISMS)}")
    if c < 1 or c_trans < 1:
        raise ValueError(f"c and c_trans must be >= 1, got {c} and {c_trans}")
    if min_users < 2:
        raise ValueError(f"min_users must be >= 2, got {min_users}")
    if traces.m < min_users:
        raise ValueError(f"coloc training needs at least min_users = {min_users} users (the public bound of the "
                         f"friendship probability's noise), got {traces.m}; lower min_users or give more users")
    if np.asarray(traces.regions).size and np.asarray(traces.regions).max() >= grid.M:
        raise ValueError(f"region index {int(np.asarray(traces.regions).max())} is outside 0..{grid.M - 1}")


def _noisy_colocations(Q: np.ndarray, grid: Grid, *, mechanism: str, hierarchy: str | list, c: int, eps2: float,
                       rng: np.random.Generator) -> tuple[np.ndarray, str, float, float]:
    """Q' = Q (M, M) co-location counts with eps2-DP noise: Laplace of scale c / eps2, or Privelet over
    ``hierarchy`` (sensitivity h c). Returns (Q', the mechanism's name, the L1 sensitivity, the scale)."""
    if mechanism == "laplace":
        q_scale = c / eps2
        return Q + rng.laplace(0.0, q_scale, size=Q.shape), "Laplace", float(c), q_scale
    # Level labels may be any integers (e.g. -1 = a region without a category): renumber them 0..k-1.
    levels = block_hierarchy(grid) if isinstance(hierarchy, str) else [
        np.unique(np.asarray(lv), return_inverse=True)[1].astype(np.int64) for lv in hierarchy]
    H = Hierarchy.of(levels, grid.M)
    q_sens = float(H.height * c)
    q_scale = q_sens / eps2
    q_name = f"Privelet over a {H.height}-level hierarchy (lambda = h c / eps2; coefficient noise lambda / W)"
    return privelet(Q, H, q_scale, rng), q_name, q_sens, q_scale


def train(traces: Traces, grid: Grid, *, slots_per_day: int = 20, friends: np.ndarray | None = None,
          eps1: float = 1.0, eps2: float = 1.0, eps3: float = 1.0, c: int = 5, c_trans: int = 5,
          mechanism: str = "laplace", hierarchy: str | list = "blocks", successors: int = 16,
          min_meetings: int = 3, min_users: int = TRAINING_DEFAULTS["min_users"], slot_start_minute: float = 480.0,
          slot_minutes: float | None = None, seed: int | None = None, progress=None) -> ColocModel:
    """Fit p', Q' and the DP transition model (see the module docstring).

    Args:
        friends: (E, 2) 0-based pairs of training users (row indexes of
            ``traces``); None infers them from the traces (``min_meetings``).
        eps1, eps2, eps3: budgets of p', Q' and the transition model (> 0).
        c: co-location instants read (the L1 sensitivity of Q);
            c_trans: transitions kept per user (the L1 sensitivity of the counts).
        min_users: public lower bound on the number of training users (p''s
            noise scale 2 / (min_users eps1)); fewer users is an error.
        mechanism: ``laplace`` or ``wavelet`` (Privelet over ``hierarchy``:
            ``"blocks"`` = 4 x 4 and 16 x 16 cell blocks, or a list of (M,)
            level arrays, coarsest first, e.g. :func:`category_hierarchy`).
        seed: the noise's seed; None (the default, as the platform trains) draws
            it from the operating system's randomness. A seed is for research
            and tests only: it is not stored in the model, but whoever knows it
            can draw the same noise and subtract it.

    The model holds only noisy statistics and public parameters; the exact
    ones (number of users, friend pairs, sites counted) are in
    ``model.training_stats`` for the organizer's console, never saved.
    """
    progress = progress or (lambda done, total, message: None)
    _check_training(traces, grid, eps=(eps1, eps2, eps3), mechanism=mechanism, c=c, c_trans=c_trans,
                    min_users=min_users)
    rng = np.random.default_rng(seed)
    T = int(slots_per_day)
    N = traces.m
    progress(0, 3, "friendship probability and co-locations")
    inferred = friends is None
    exact = exact_statistics(traces, grid, slots_per_day=T, friends=friends, c=c, c_trans=c_trans,
                             min_meetings=min_meetings, salt=int(rng.integers(2**62)))
    p_noisy = float(np.clip(exact["p"] + rng.laplace(0.0, friendship_scale(min_users, eps1)), 0.0, 1.0))
    progress(1, 3, "co-location counts")
    Q = exact["Q"]
    Qn, q_name, q_sens, q_scale = _noisy_colocations(Q, grid, mechanism=mechanism, hierarchy=hierarchy, c=c,
                                                     eps2=eps2, rng=rng)
    progress(2, 3, "transition model")
    succ, prob = noisy_transitions(exact["transitions"], c_trans, eps3, successors, rng)
    start = stationary(succ, prob)
    ledger = ledger_entries(eps1=eps1, eps2=eps2, eps3=eps3, c=c, c_trans=c_trans, min_users=min_users,
                            inferred=inferred, q_name=q_name, q_sensitivity=q_sens, q_scale=q_scale)
    progress(3, 3, "done")
    # Public parameters only: no count computed from the training data, no seed.
    params = dict(eps1=float(eps1), eps2=float(eps2), eps3=float(eps3), c=int(c), c_trans=int(c_trans),
                  mechanism=mechanism, hierarchy=hierarchy if isinstance(hierarchy, str) else "given levels",
                  successors=int(successors), min_meetings=int(min_meetings), min_users=int(min_users),
                  slots_per_day=T, friends_inferred=inferred)
    model = ColocModel(p_friend=p_noisy, Q=Qn, succ=succ, prob=prob, start=start, nx=grid.nx, ny=grid.ny,
                       slot_start_minute=float(slot_start_minute),
                       slot_minutes=float(600.0 / T if slot_minutes is None else slot_minutes),
                       params=params, ledger_entries=ledger, grid_box=grid_box(grid))
    model.training_stats = dict(training_users=N, friendships=int(len(exact["edges"])),
                                friendship_probability=exact["p"], colocation_sites_counted=int(Q.sum()),
                                instants_read=int(len(exact["read"])),
                                transitions_counted=int(exact["transitions"].sum()),
                                note="exact statistics of the training data: NOT differentially private, "
                                     "for the organizer only, never saved in the model or the manifest")
    return model


def ledger_entries(*, eps1: float, eps2: float, eps3: float, c: int, c_trans: int, min_users: int, inferred: bool,
                   q_name: str = "Laplace", q_sensitivity: float | None = None, q_scale: float | None = None) -> list:
    """The mechanisms of a coloc model: what each reads (``data``: the data sets), its notion, epsilon,
    declared sensitivity (what :mod:`synth.audit` checks) and noise scale."""
    graph = ["training traces"] if inferred else ["friendship graph"]
    q_sensitivity = float(c) if q_sensitivity is None else q_sensitivity
    return [
        dict(mechanism="friendship probability p'", data=graph, notion="node DP (add or remove a user)",
             epsilon=float(eps1), sensitivity=friendship_sensitivity(min_users), scale=friendship_scale(min_users, eps1),
             bound=f"training sets of at least min_users = {min_users} users",
             source="inferred from the traces (min_meetings)" if inferred else "given"),
        dict(mechanism=f"co-location count matrix Q' ({q_name})", data=sorted(set(["training traces"] + graph)),
             notion="user-level DP (add or remove a user)", epsilon=float(eps2), sensitivity=q_sensitivity,
             scale=q_sensitivity / eps2 if q_scale is None else q_scale, instants_read=int(c)),
        dict(mechanism="transition matrix (TPM)", data=["training traces"], notion="user-level DP (add or remove "
             "a user)", epsilon=float(eps3), sensitivity=float(c_trans), scale=c_trans / eps3, trimming=int(c_trans)),
    ]


# ---------------------------------------------------------------------------
# Generation (sec. 4.4)
# ---------------------------------------------------------------------------
def erdos_renyi(n: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """(E, 2) int64 edges i < j of G(n, p), ascending."""
    pairs = n * (n - 1) // 2
    if pairs == 0 or p <= 0:
        return np.zeros((0, 2), np.int64)
    E = rng.binomial(pairs, min(p, 1.0))
    k = np.sort(rng.choice(pairs, size=E, replace=False)).astype(np.int64)
    # Pair index k -> (i, j), i < j, row-major over the upper triangle.
    i = (n - 2 - np.floor(np.sqrt(-8.0 * k + 4.0 * n * (n - 1) - 7) / 2.0 - 0.5)).astype(np.int64)
    j = k + i + 1 - n * (n - 1) // 2 + (n - i) * (n - i - 1) // 2
    return np.stack([i, j], axis=1)


def colocation_rows(Q: np.ndarray) -> np.ndarray:
    """R': each row of Q' shifted by its minimum when negative, then normalised (uniform if all zero)."""
    R = Q - np.minimum(Q.min(axis=1, keepdims=True), 0.0)
    tot = R.sum(axis=1, keepdims=True)
    M = Q.shape[1]
    return np.divide(R, tot, out=np.full_like(R, 1.0 / M), where=tot > 0)


def plant(edges: np.ndarray, n: int, L: int, theta: int, row_of_instant: np.ndarray, R: np.ndarray,
          rng: np.random.Generator, max_rounds: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Plant ``theta`` co-location events between friends (sec. 4.4 step 3).

    Args:
        edges: (E, 2) friend pairs; n users; L time instants per user.
        row_of_instant: (L,) row of R (slot of the day) of each instant.
        R: (T, M) co-location probability rows.

    Returns:
        planted (n, L) int64 region or -1, and events (theta', 4) int64
        (u, v, instant, region), theta' = theta unless no friends or too many conflicts.

    Events are drawn in rounds (vectorised): a (pair, instant) whose users
    already have a planted location at that instant reuses it; if both have
    different ones, the draw is dropped; draws touching the same (user,
    instant) as an earlier draw of the round wait for the next round.
    """
    planted = np.full((n, L), -1, dtype=np.int64)
    events = []
    got = 0
    cum = np.cumsum(R, axis=1)
    for _ in range(max_rounds):
        if got >= theta or len(edges) == 0:
            break
        B = 2 * (theta - got) + 16
        e = edges[rng.integers(0, len(edges), size=B)]
        t = rng.integers(0, L, size=B)
        u, v = e[:, 0], e[:, 1]
        k = np.concatenate([u * L + t, v * L + t])
        _uniq, inv, cnt = np.unique(k, return_inverse=True, return_counts=True)
        first = np.zeros(len(k), bool)
        first[np.unique(inv, return_index=True)[1]] = True
        clash = ~(first[:B] & first[B:])
        a, b = planted[u, t], planted[v, t]
        conflict = (a >= 0) & (b >= 0) & (a != b)
        ok = ~clash & ~conflict
        idx = np.flatnonzero(ok)[:theta - got]
        u, v, t, a, b = u[idx], v[idx], t[idx], a[idx], b[idx]
        rows = row_of_instant[t]
        draw = np.minimum((rng.random(len(idx))[:, None] * cum[rows, -1:] > cum[rows]).sum(axis=1),
                          R.shape[1] - 1)
        x = np.where(a >= 0, a, np.where(b >= 0, b, draw))
        planted[u, t] = x
        planted[v, t] = x
        events.append(np.stack([u, v, t, x], axis=1))
        got += len(idx)
    ev = np.concatenate(events) if events else np.zeros((0, 4), np.int64)
    return planted, ev


def _constrain(score: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """Keep only the fixed region's score (in place) on chains with a fixed point (``fixed`` >= 0)."""
    cons = fixed >= 0
    if cons.any():
        keep = score[cons, fixed[cons]]
        score[cons] = -np.inf
        score[cons, fixed[cons]] = keep
    return score


def _log_noise(rng: np.random.Generator, par_v: float, shape) -> np.ndarray | float:
    """log U[1, par_v] (float32), the randomised Viterbi's factors; 0 for plain Viterbi."""
    return np.log(rng.uniform(1.0, par_v, size=shape)).astype(np.float32) if par_v > 1 else 0.0


class ColocSynthesizer(ContestDaySynthesizer):
    """Sets of a :class:`ColocModel` on the contest's day (see the module docstring).

    Options: ``theta`` co-location events per set, ``par_v`` the Viterbi
    randomisation (1 = plain Viterbi), ``max_rounds`` of planting. Their types and bounds are the
    method's schema (registered below), checked once by :func:`synth.methods.make_synthesizer`.
    """

    def __init__(self, model: ColocModel, *, slots: int = 20, slot_start_minute: float = 480,
                 slot_step_minutes: float = 30, **params):
        super().__init__(model, GENERATION_DEFAULTS, slots=slots, slot_start_minute=slot_start_minute,
                         slot_step_minutes=slot_step_minutes, params=params)
        self.R = colocation_rows(model.Q)
        M, k = model.succ.shape
        self.cum = np.cumsum(model.prob, axis=1)
        # Predecessors of every region, padded to the largest in-degree (pads: -inf), for the Viterbi's max.
        src = np.repeat(np.arange(M), k)
        dst = model.succ.ravel()
        order = np.argsort(dst, kind="stable")
        indeg = np.bincount(dst, minlength=M)
        width = max(1, int(indeg.max()))
        slot = np.arange(len(dst)) - np.repeat(np.cumsum(indeg) - indeg, indeg)
        self.pred = np.zeros((M, width), dtype=np.int64)
        self.pred_logp = np.full((M, width), -np.inf, dtype=np.float32)
        self.pred[dst[order], slot] = src[order]
        self.pred_logp[dst[order], slot] = np.log(np.maximum(model.prob.ravel()[order], 1e-300))
        self.log_start = np.log(np.maximum(model.start, 1e-300))
        self.friends = np.zeros((0, 2), np.int64)
        self.events = np.zeros((0, 4), np.int64)
        self.stats = {}

    def options(self) -> dict:
        return dict(self.p)

    def _sample_days(self, C: int, rng) -> np.ndarray:
        """(C, S) free days: start ~ stationary, then the transition model."""
        m = self.model
        out = np.empty((C, self.S), dtype=np.int64)
        cs = np.cumsum(m.start)
        x = np.minimum(np.searchsorted(cs, rng.random(C) * cs[-1], side="right"), m.M - 1)
        out[:, 0] = x
        for s in range(1, self.S):
            j = (rng.random(C)[:, None] > self.cum[x]).sum(axis=1)
            x = m.succ[x, np.minimum(j, m.succ.shape[1] - 1)]
            out[:, s] = x
        return out

    def _viterbi_days(self, fixed: np.ndarray, rng) -> np.ndarray:
        """(C, S) randomised Viterbi paths of the transition model through the fixed points (C, S) (-1 = free).

        Transitions outside the kept successors have probability :data:`FLOOR`.
        """
        C, S = fixed.shape
        M = self.model.M
        par_v = float(self.p["par_v"])
        out = np.empty((C, S), dtype=np.int64)
        width = self.pred.shape[1]
        step = max(1, (1 << 23) // (M * width))
        log_floor = np.log(FLOOR)
        for lo in range(0, C, step):
            f = fixed[lo:lo + step]
            c = len(f)
            rows = np.arange(c)

            score = _constrain(np.repeat(self.log_start[None, :], c, axis=0).astype(np.float32)
                               + _log_noise(rng, par_v, (c, M)), f[:, 0])
            back = np.empty((c, S, M), dtype=np.int32)
            for s in range(1, S):
                vals = score[:, self.pred] + self.pred_logp                       # (c, M, width)
                k = np.argmax(vals, axis=2)
                best = np.take_along_axis(vals, k[:, :, None], axis=2)[:, :, 0]
                arg = self.pred[np.arange(M)[None, :], k]
                top = np.argmax(score, axis=1)
                jump = score[rows, top][:, None] + log_floor                      # any move, probability FLOOR
                use_jump = jump > best
                back[:, s] = np.where(use_jump, top[:, None], arg)
                score = _constrain(np.where(use_jump, jump, best) + _log_noise(rng, par_v, (c, M)), f[:, s])
            j = np.argmax(score, axis=1)
            for s in range(S - 1, -1, -1):
                out[lo:lo + c, s] = j
                if s:
                    j = back[rows, s, j]
        return out

    def sample_set(self, users: int, n_days: int, rng: np.random.Generator, progress=None) -> np.ndarray:
        """(users, n_days, S) int32 regions; ``self.friends`` the friendship graph G', ``self.events`` the
        planted co-locations (u, v, instant, region) with instant = day * S + slot."""
        S = self.S
        L = n_days * S
        edges = erdos_renyi(users, self.model.p_friend, rng)
        planted, events = plant(edges, users, L, int(self.p["theta"]), self.mslot[np.arange(L) % S], self.R,
                                rng, int(self.p["max_rounds"]))
        days = planted.reshape(users * n_days, S)
        has = (days >= 0).any(axis=1)
        out = np.empty((users * n_days, S), dtype=np.int64)
        if (~has).any():
            out[~has] = self._sample_days(int((~has).sum()), rng)
        if has.any():
            out[has] = self._viterbi_days(days[has], rng)
        self.friends, self.events = edges, events
        self.stats = dict(users=users, friendships=int(len(edges)), p_friend=self.model.p_friend,
                          theta=int(self.p["theta"]), colocations_planted=int(len(events)),
                          days_with_colocations=int(has.sum()))
        if progress:
            progress(users, users, "synthesized")
        return out.reshape(users, n_days, S).astype(np.int32)


def least_users(params: dict) -> tuple[int, str]:
    """(the fewest training users, why) with training ``params``: ``min_users``, the public bound of the
    friendship probability's noise (:func:`train` refuses fewer)."""
    need = int(params.get("min_users", TRAINING_DEFAULTS["min_users"]))
    return need, (f"min_users = {need} (the public bound of coloc's friendship noise); "
                  "set synthesizer_params.min_users")


def city_params(city, train_users: int, params: dict) -> dict:
    """A contest's training parameters on the built-in city: ``hierarchy="categories"`` is the city's POI
    categories, and the city's size is the public bound of p''s noise: calibrated on training sets of at
    least ``train_users - 1`` users (every neighbour of the city by removal)."""
    params = dict(params)
    if params.get("hierarchy") == "categories":
        params["hierarchy"] = [city.region_categories()]
    params.setdefault("min_users", max(2, train_users - 1))
    return params


register(Method(
    name=METHOD,
    title="co-location-aware traces with differential privacy (seed 003, Narita et al.)",
    training={"eps1": number_check(0, 1e6, open_lo=True), "eps2": number_check(0, 1e6, open_lo=True),
              "eps3": number_check(0, 1e6, open_lo=True), "c": int_check(1, 10_000), "c_trans": int_check(1, 10_000),
              "mechanism": choice_check(*MECHANISMS), "hierarchy": choice_check("blocks", "categories"),
              "successors": int_check(1, 1024), "min_meetings": int_check(1, 10_000),
              "min_users": int_check(2, 100_000)},
    options={"theta": with_reason(int_check(0, 100_000), "co-location events planted per set: each takes two "
                                                          "user-instants, and a 2019-size set has fewer free "
                                                          "ones; planting loops until it has them"),
             "par_v": number_check(1, 1e6),
             "max_rounds": with_reason(int_check(1, 1000), "planting rounds per set; work grows with it")},
    train=train, synthesizer=ColocSynthesizer, load=ColocModel.load,
    generator="coloc", generator_version=GENERATOR_VERSION, describe=ColocModel.describe,
    city_params=city_params, fresh_noise=True, least_users=least_users))
