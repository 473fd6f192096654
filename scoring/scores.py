"""The contest's three scores (rules §7), all in [0, 1], higher = better for the defender.

- :func:`utility` (s_U) of anonymized traces against the original traces,
  with :func:`is_valid` against s_req;
- :func:`reidentification` (s_I, the paper's s_R) of an estimated ID table;
- :func:`trace_inference` (s_T) of estimated traces, hospital events weighted.

Everything is float64 and vectorised: per-event values are gathers into the
grid's (M, M) km distance matrix; a generalized event's value is computed
once per distinct (original region, set) pair by expanding the set members,
gathering their distances and reducing per segment, then gathered back to
the events.
"""
from __future__ import annotations

import functools

import numpy as np

from .traces import AnonymizedTraces, SetTable, Traces
from .vocabulary import AttackKind

#: utility conventions of a generalized set (see :func:`set_pair_utility`)
MEAN_DISTANCE = "mean-distance"  # the paper's
MEAN_LOSS = "mean-loss"  # the 2019 program's
CONVENTIONS = (MEAN_DISTANCE, MEAN_LOSS)

#: Members expanded per batch when scoring generalized sets (bounds memory to ~100 MB).
_BATCH_MEMBERS = 4_000_000


def g_u(distance_km, lambda_u: float = 2.0):
    """Utility of a distance: ``max(0, 1 - a / lambda_U)`` (paper Fig. 7, left)."""
    return np.maximum(0.0, 1.0 - np.asarray(distance_km, dtype=np.float64) / lambda_u)


def g_t(distance_km, lambda_t: float = 2.0):
    """Trace-inference privacy of a distance: ``min(1, b / lambda_T)`` (paper Fig. 7, right)."""
    return np.minimum(1.0, np.asarray(distance_km, dtype=np.float64) / lambda_t)


def _check_aligned(truth: Traces, other, what: str) -> None:
    shape = other.events.shape if isinstance(other, AnonymizedTraces) else other.regions.shape
    if shape != truth.regions.shape:
        raise ValueError(f"{what} has shape {shape}, the original traces {truth.regions.shape}")
    if not (np.array_equal(other.user_ids, truth.user_ids) and np.array_equal(other.time_ids, truth.time_ids)):
        raise ValueError(f"{what} does not have the original traces' user ids and time ids")


def set_pair_utility(distance: np.ndarray, sets: SetTable, origins: np.ndarray, set_ids: np.ndarray, *,
                     convention: str = MEAN_DISTANCE, lambda_u: float = 2.0) -> np.ndarray:
    """Utility of generalized set ``set_ids[k]`` for original region ``origins[k]``.

    Args:
        distance: (M, M) km distance matrix.
        sets: the interned set table.
        origins: (P,) 0-based original regions.
        set_ids: (P,) set ids with at least one member.
        convention: ``mean-distance`` = g_U(mean_{r in G} d(o, r)) (the paper);
            ``mean-loss`` = mean_{r in G} g_U(d(o, r)) (the 2019 program).
    Returns:
        (P,) float64 utilities.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown utility convention {convention!r}; expected one of {CONVENTIONS}")
    origins = np.asarray(origins, dtype=np.int64)
    set_ids = np.asarray(set_ids, dtype=np.int64)
    sizes = sets.sizes[set_ids]
    if len(sizes) and sizes.min() < 1:
        raise ValueError("set_pair_utility needs non-empty sets (a deletion has utility 0)")
    out = np.empty(len(set_ids), dtype=np.float64)
    ends = np.cumsum(sizes)
    a = 0
    while a < len(set_ids):
        # Largest batch whose expanded members fit the budget (always at least one pair).
        base = ends[a - 1] if a else 0
        b = max(a + 1, int(np.searchsorted(ends, base + _BATCH_MEMBERS, side="right")))
        sz = sizes[a:b]
        seg_start = np.cumsum(sz) - sz
        total = int(sz.sum())
        member_pos = np.repeat(sets.indptr[set_ids[a:b]] - seg_start, sz) + np.arange(total)
        d = distance[np.repeat(origins[a:b], sz), sets.members[member_pos]]
        if convention == MEAN_DISTANCE:
            out[a:b] = g_u(np.add.reduceat(d, seg_start) / sz, lambda_u)
        else:
            out[a:b] = np.add.reduceat(g_u(d, lambda_u), seg_start) / sz
        a = b
    return out


def utility_per_event(grid, truth: Traces, anon: AnonymizedTraces, *, convention: str = MEAN_DISTANCE,
                      lambda_u: float = 2.0) -> np.ndarray:
    """Per-event utility u(ev) of rules §7.

    Args:
        grid: the contest grid (its distance matrix is used).
        truth: original traces O, regions (m, L).
        anon: anonymized traces O* of the same users and time ids, events (m, L).
        convention: ``mean-distance`` (default) or ``mean-loss`` for generalized sets.
        lambda_u: threshold in km.
    Returns:
        (m, L) float64: g_U(d(o, r)) for a single region r, 0 for a deletion,
        the convention's value for a generalized set.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown utility convention {convention!r}; expected one of {CONVENTIONS}")
    _check_aligned(truth, anon, "the anonymized traces")
    M = grid.M
    if anon.sets.M != M:
        raise ValueError(f"the anonymized traces' set table has {anon.sets.M} regions, the grid {M}")
    dist = grid.distance
    o = truth.regions.ravel().astype(np.int64)
    s = anon.events.ravel().astype(np.int64)
    u = np.zeros(o.size, dtype=np.float64)
    single = s < M
    u[single] = np.take(_of_pairs(grid, g_u, float(lambda_u)), _pair_index(grid, o[single], s[single]))
    gen = np.flatnonzero(s > M)
    if len(gen):
        n_sets = anon.sets.n_sets
        pair, inverse = np.unique(o[gen] * n_sets + s[gen], return_inverse=True)
        values = set_pair_utility(dist, anon.sets, pair // n_sets, pair % n_sets,
                                  convention=convention, lambda_u=lambda_u)
        u[gen] = values[inverse.ravel()]
    return u.reshape(truth.regions.shape)


def utility(grid, truth: Traces, anon: AnonymizedTraces, *, convention: str = MEAN_DISTANCE,
            lambda_u: float = 2.0) -> float:
    """Utility score s_U: the mean of :func:`utility_per_event` over the m*L events."""
    u = utility_per_event(grid, truth, anon, convention=convention, lambda_u=lambda_u)
    return float(u.mean()) if u.size else 0.0


def is_valid(s_u: float, s_req: float = 0.7) -> bool:
    """An anonymized set is valid iff ``s_U >= s_req`` (rules §7)."""
    return bool(s_u >= s_req)


def reidentification(true_user_ids, estimated_user_ids) -> float:
    """Re-identification privacy s_I = 1 - (#pseudonyms whose estimate is right) / m.

    Args:
        true_user_ids: (n,) the ID table f, user id of each pseudonym in
            ascending pseudonym order.
        estimated_user_ids: (n,) the attacker's estimate f_hat in the same order.
    """
    f = np.asarray(true_user_ids)
    f_hat = np.asarray(estimated_user_ids)
    if f.shape != f_hat.shape or f.ndim != 1:
        raise ValueError(f"the ID tables differ in shape: {f.shape} vs {f_hat.shape}")
    if f.size == 0:
        raise ValueError("the ID table is empty")
    return float(1.0 - np.count_nonzero(f == f_hat) / f.size)


def trace_inference_per_event(grid, truth: Traces, estimate: Traces, *, lambda_t: float = 2.0) -> np.ndarray:
    """(m, L) float64 min(1, d(o(ev), o_hat(ev)) / lambda_T) per event (unweighted)."""
    _check_aligned(truth, estimate, "the estimated traces")
    return np.take(_of_pairs(grid, g_t, float(lambda_t)), _pair_index(grid, truth.regions, estimate.regions))


@functools.lru_cache(maxsize=16)
def _of_pairs(grid, g, lam: float) -> np.ndarray:
    """(M * M,) read-only ``g(d(o, r), lam)`` for every pair of regions (o, r), flat (row = o), for
    ``g`` = :func:`g_u` or :func:`g_t`: one lookup per event instead of a 2-D gather and two passes of
    arithmetic (54 -> 18 ms at 2000 x 400 events; every s_T and s_U of a round takes this path). The
    same float operations per pair, so the same values bit for bit."""
    table = g(grid.distance, lam).ravel()
    table.setflags(write=False)
    return table


def _pair_index(grid, origins: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """Index of each (original region, region) pair into :func:`_of_pairs`'s table."""
    return np.asarray(origins, dtype=np.int64) * grid.M + regions


def trace_inference_weighted(grid, truth: Traces, estimate: Traces, *, lambda_t: float = 2.0,
                             hospital_weight: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """The two (m, L) float64 arrays behind s_T: each event's weighted error
    ``w(ev) * min(1, d(o, o_hat) / lambda_T)`` and its weight ``w(ev)`` (``hospital_weight`` where the
    ORIGINAL region is a hospital region of ``grid``, else 1). :func:`trace_inference` is their sums'
    ratio; the per-user parts (``scoring.uncertainty``) are their row sums, from the same arrays."""
    per_event = trace_inference_per_event(grid, truth, estimate, lambda_t=lambda_t)
    w = grid.region_weights(hospital_weight)[truth.regions]
    return w * per_event, w


def weighted_error_ratio(weighted: np.ndarray, weights: np.ndarray) -> float:
    """s_T from :func:`trace_inference_weighted`'s arrays: sum of weighted errors over sum of weights."""
    total = weights.sum()
    if total <= 0:
        raise ValueError("the event weights sum to zero")
    return float(weighted.sum() / total)


def trace_inference(grid, truth: Traces, estimate: Traces, *, lambda_t: float = 2.0,
                    hospital_weight: float = 10.0) -> float:
    """Trace-inference privacy s_T (rules §7).

    ``sum_ev w(ev) * min(1, d(o, o_hat) / lambda_T) / sum_ev w(ev)`` where
    ``w(ev) = hospital_weight`` if the ORIGINAL region o(ev) is a hospital
    region of ``grid``, else 1.
    """
    return weighted_error_ratio(*trace_inference_weighted(grid, truth, estimate, lambda_t=lambda_t,
                                                          hospital_weight=hospital_weight))


def attack_score(kind: str, grid, estimate, *, true_users=None, truth: Traces | None = None,
                 lambda_t: float = 2.0, hospital_weight: float = 10.0) -> float:
    """The privacy score of one attack's output, by its kind: the one kind-to-score dispatch.

    Args:
        kind: ``"reidentification"`` (``estimate`` is an etable, (n_pseudonyms,) user ids in
            ascending pseudonym order; needs ``true_users``, the secret ID table in the same order)
            or ``"trace_inference"`` (``estimate`` is etraces, :class:`Traces`; needs ``truth``,
            the original traces O).
        grid: the contest grid (distances for s_T).

    Returns:
        s_I or s_T as a float in [0, 1].
    """
    if kind == AttackKind.REIDENTIFICATION:
        if true_users is None:
            raise ValueError("a re-identification score needs the true user ids of the pseudonyms")
        return float(reidentification(true_users, estimate))
    if kind == AttackKind.TRACE_INFERENCE:
        if truth is None:
            raise ValueError("a trace-inference score needs the original traces")
        return float(trace_inference(grid, truth, estimate, lambda_t=lambda_t, hospital_weight=hospital_weight))
    raise ValueError(f"{kind!r} is not an attack kind; expected one of reidentification, trace_inference")
