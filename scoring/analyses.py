"""Analyses shown with the results (rules §13, paper section 5.5 and Appendix E).

Utility of anonymized traces beyond s_U -- population distributions
(TP-TV-Top50), transition matrices (TM-EMD) and POI accuracy -- with the two
baselines of the paper's Figure 13, plus the correlation coefficient of the
s_I,min vs s_T,min scatter (Fig. 9) and the fairness figure (Appendix E).
The synthesizer's realism metrics use the same functions.

Every function accepts plain :class:`~scoring.traces.Traces` or
:class:`~scoring.traces.AnonymizedTraces`; plain traces are the special case
where every event is a singleton. Mass of an event is spread over its set:

- a single region counts 1 for that region;
- a generalized set G counts 1/|G| for each member (rules §13);
- a deletion counts nothing.

All of this is one sparse product: ``U`` is the (n_sets x M) matrix whose row
``g`` holds 1/|G| at the members of set ``g`` (the deletion's row is empty),
and counts of (slot, set) or (set, set) pairs are multiplied through it.
No Python loop runs per event, user, row or set: the only loops are over the
sliced-W1 projection directions and over fixed-size chunks (memory bounds).

Decisions where rules §13 is silent
---------------------------------
- Slot of the day of a time id is ``(time_id - 1) % slots_per_day``; the
  day is ``(time_id - 1) // slots_per_day`` (time ids start at 1 on a day
  boundary, rules §3).
- A population row (slot) with no mass (every event deleted) stays all zero;
  averages over slots run over the slots of the day that occur in O.
- TP-TV-Top50: the top regions are chosen on O's distribution at that slot,
  ties broken by the lower region index; both distributions are the full
  normalised ones (the regions outside the top simply do not enter the sum).
- Transitions: a pair of consecutive time ids of the same day of one user.
  With generalized sets on either side the pair's mass 1 is split evenly
  over G_a x G_b, i.e. 1/(|G_a||G_b|) per (a, b) -- the product of the two
  events' population weights; a deletion on either side contributes
  nothing. The matrix returned is the pooled (unnormalised) mass.
- TM-EMD row normalisation: a row with no mass becomes a self-loop (rules §13),
  so a region visited by neither O nor A contributes distance 0.
- Sliced W1 projections: the same directions as POT's
  ``ot.sliced_wasserstein_distance(..., seed=seed)`` draws --
  ``numpy.random.RandomState(seed).randn(2, n_projections)`` normalised per
  column -- so our value equals POT's for the same seed.
- POI accuracy: a POI is placed at the centre of its region (POIs come as
  region indices); "within r km" is ``d <= r + 1e-9`` (the tolerance keeps a
  distance that equals r up to rounding inside). Events without any POI
  within r1 are skipped; if no event has one the result is NaN.
- Reference baseline: original day d (counted from O's first day) takes
  reference day ``d mod Lr`` at the same slot, users matched by id.
- Fairness: population standard deviation (``ddof=0``, numpy's default;
  Appendix E does not say which), selectable.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from scoring.grid import Grid, slot_of_day
from scoring.traces import AnonymizedTraces, SetTable, Traces

#: Absolute tolerance (km) of the POI radius comparisons.
RADIUS_TOLERANCE_KM = 1e-9


# --------------------------------------------------------------------------
# common pieces
# --------------------------------------------------------------------------
def _as_anonymized(data, M: int) -> AnonymizedTraces:
    if isinstance(data, AnonymizedTraces):
        if data.sets.M != M:
            raise ValueError(f"anonymized traces are on a grid of {data.sets.M} regions, expected {M}")
        return data
    if isinstance(data, Traces):
        if data.regions.size and (data.regions.min() < 0 or data.regions.max() >= M):
            raise ValueError(f"trace regions must be 0-based indices in 0..{M - 1}")
        return AnonymizedTraces.from_traces(data, M)
    raise TypeError(f"expected Traces or AnonymizedTraces, got {type(data).__name__}")


def set_weights(sets: SetTable) -> sp.csr_matrix:
    """(n_sets, M) sparse matrix: row g has 1/|G| at each member of set g (empty for the deletion)."""
    sizes = np.diff(sets.indptr)
    data = np.repeat(1.0 / np.maximum(sizes, 1), sizes)
    # The members as they are (int32): scipy keeps 32-bit indices when they fit, so a table of tens of
    # millions of members is not copied to int64 and back (435 MB less at 36M members).
    return sp.csr_matrix((data, sets.members, sets.indptr), shape=(sets.n_sets, sets.M))


def _check_aligned(original: Traces, anonymized: AnonymizedTraces) -> None:
    if original.regions.shape != anonymized.events.shape:
        raise ValueError(f"anonymized traces have shape {anonymized.events.shape}, "
                         f"original {original.regions.shape}: they must cover the same events")
    if not np.array_equal(original.user_ids, anonymized.user_ids):
        raise ValueError("anonymized traces must list the same user ids as the original, in the same order")
    if not np.array_equal(original.time_ids, anonymized.time_ids):
        raise ValueError("anonymized traces must list the same time ids as the original")


# --------------------------------------------------------------------------
# population distributions and TP-TV
# --------------------------------------------------------------------------
def population_counts(grid: Grid, traces, slots_per_day: int) -> np.ndarray:
    """Per slot-of-day population mass, unnormalised: the one population count of the platform.

    Args:
        grid: the contest grid (M regions).
        traces: :class:`Traces` or :class:`AnonymizedTraces` (all their time ids are used).
        slots_per_day: S.

    Returns:
        (S, M) float64; entry (s, r) is the mass of the events at slot s of any
        day in region r: a single region counts 1, a generalized set 1/|G| per
        member, a deletion 0. ``.sum(axis=0)`` is the whole day's mass.
    """
    anon = _as_anonymized(traces, grid.M)
    slot = slot_of_day(anon.time_ids, slots_per_day)
    m, L = anon.events.shape
    rows = np.broadcast_to(slot, (m, L)).ravel()
    cols = anon.events.ravel().astype(np.int64)
    counts = sp.csr_matrix((np.ones(m * L), (rows, cols)), shape=(slots_per_day, anon.sets.n_sets))
    return np.asarray((counts @ set_weights(anon.sets)).todense())


def population(grid: Grid, traces, slots_per_day: int) -> np.ndarray:
    """Per slot-of-day population distribution: :func:`population_counts` with each row
    normalised to sum 1 (all-zero if the slot has no mass). (S, M) float64."""
    pop = population_counts(grid, traces, slots_per_day)
    total = pop.sum(axis=1, keepdims=True)
    np.divide(pop, total, out=pop, where=total > 0)
    return pop


def _slots_present(original, slots_per_day: int) -> np.ndarray:
    return np.unique(slot_of_day(original.time_ids, slots_per_day))


def tp_tv_top50(grid: Grid, original, anonymized, slots_per_day: int, top: int = 50) -> float:
    """TP-TV-Top50 (lower is better).

    For each slot of the day occurring in ``original``: the L1 sum
    ``sum_{r in top(s)} |p_O(s, r) - p_A(s, r)|`` over the ``top`` regions
    most visited in O at that slot (ties: lower region index first), no 1/2
    factor; averaged over those slots.
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    p_o = population(grid, original, slots_per_day)
    p_a = population(grid, anonymized, slots_per_day)
    slots = _slots_present(original, slots_per_day)
    top = min(top, grid.M)
    order = np.argsort(-p_o[slots], axis=1, kind="stable")[:, :top]
    diff = np.abs(p_o[slots] - p_a[slots])
    return float(np.take_along_axis(diff, order, axis=1).sum(axis=1).mean())


def tp_tv(grid: Grid, original, anonymized, slots_per_day: int) -> float:
    """Full L1 distance ``sum_r |p_O(s, r) - p_A(s, r)|`` over all regions, averaged over O's slots."""
    p_o = population(grid, original, slots_per_day)
    p_a = population(grid, anonymized, slots_per_day)
    slots = _slots_present(original, slots_per_day)
    return float(np.abs(p_o[slots] - p_a[slots]).sum(axis=1).mean())


# --------------------------------------------------------------------------
# transition matrices and TM-EMD
# --------------------------------------------------------------------------
def transition_mass(grid: Grid, traces, slots_per_day: int) -> sp.csr_matrix:
    """Pooled transition mass between consecutive slots of the same day, sparse.

    Returns:
        (M, M) CSR float64 ``T[a, b]``: total mass of transitions a -> b over all
        users and all pairs of consecutive time ids ``(t, t+1)`` on the same
        day; a pair of sets (G_a, G_b) puts 1/(|G_a||G_b|) on each member
        pair, a deletion on either side puts nothing. Not normalised.
    """
    anon = _as_anonymized(traces, grid.M)
    t = np.asarray(anon.time_ids, dtype=np.int64)
    slot_of_day(t, slots_per_day)  # validates slots_per_day
    day = (t - 1) // slots_per_day
    j = np.flatnonzero((t[1:] == t[:-1] + 1) & (day[1:] == day[:-1]))
    n = anon.sets.n_sets
    if j.size == 0 or anon.m == 0:
        return sp.csr_matrix((grid.M, grid.M))
    a = anon.events[:, j].ravel().astype(np.int64)
    b = anon.events[:, j + 1].ravel().astype(np.int64)
    pairs = sp.csr_matrix((np.ones(a.size), (a, b)), shape=(n, n))
    U = set_weights(anon.sets)
    return sp.csr_matrix(U.T @ pairs @ U)


def transition_matrix(grid: Grid, traces, slots_per_day: int) -> np.ndarray:
    """:func:`transition_mass` as a dense (M, M) float64 array."""
    return transition_mass(grid, traces, slots_per_day).toarray()


def row_normalise(T, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows divided by their sums; a row with no mass becomes a self-loop (1 on the diagonal).

    ``T``: (M, M), dense or sparse. ``rows``: the row numbers to return (all by default), giving an
    (len(rows), M) array whose row i is row ``rows[i]`` normalised (its self-loop in column ``rows[i]``).
    """
    rows = np.arange(T.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    T = T[rows].toarray() if sp.issparse(T) else np.asarray(T, dtype=np.float64)[rows]
    total = T.sum(axis=1, keepdims=True)
    P = np.divide(T, total, out=np.zeros_like(T), where=total > 0)
    empty = np.flatnonzero(total[:, 0] <= 0)
    P[empty, rows[empty]] = 1.0
    return P


def random_projections(n_projections: int, seed: int = 0, dim: int = 2) -> np.ndarray:
    """(dim, n_projections) unit directions, identical to POT's ``get_random_projections(dim, n, seed)``."""
    if n_projections < 1:
        raise ValueError(f"n_projections must be >= 1, got {n_projections}")
    theta = np.random.RandomState(seed).randn(dim, n_projections)
    return theta / np.sqrt((theta ** 2).sum(axis=0, keepdims=True))


def sliced_w1_rows(P: np.ndarray, Q: np.ndarray, support: np.ndarray, projections: np.ndarray,
                   method: str = "auto") -> np.ndarray:
    """Sliced 1-Wasserstein distance between matching rows of P and Q on a shared support.

    Args:
        P, Q: (R, K) non-negative weights, each row summing to 1.
        support: (K, d) coordinates of the K support points.
        projections: (d, n) unit directions.
        method: ``"dense"``, ``"sparse"`` or ``"auto"`` (sparse when fewer
            than 7 in 100 of the entries of P - Q are non-zero, as in the 2019
            transition matrices; measured at 1024 x 1024, 50 directions: dense
            0.26-0.30 s at any share, sparse 0.18 s at 5 % and 0.40 s at 10 %); both give the same value.

    Returns:
        (R,) float64: for each row, the mean over directions theta of the 1-D
        W1 between the pushforwards on ``support @ theta``, i.e. the integral
        of |F_P - F_Q| (difference of the CDFs) along the projected line.
    """
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    if P.shape != Q.shape or P.ndim != 2 or P.shape[1] != len(support):
        raise ValueError(f"P {P.shape} and Q {Q.shape} must be (R, K) with K = {len(support)} support points")
    if method not in ("auto", "dense", "sparse"):
        raise ValueError(f"method must be 'auto', 'dense' or 'sparse', got {method!r}")
    proj = np.asarray(support, dtype=np.float64) @ projections  # (K, n)
    out = np.zeros(P.shape[0])
    # Rows where P and Q agree (e.g. two self-loops) are at distance 0: skip them.
    rows = np.flatnonzero((P != Q).any(axis=1))
    if rows.size == 0:
        return out
    D = P[rows] - Q[rows]                                       # (R', K)
    if method == "sparse" or (method == "auto" and np.count_nonzero(D) * 100 < D.size * 7):
        acc = _sliced_w1_sparse(D, proj)
    else:
        acc = _sliced_w1_dense(D, proj)
    out[rows] = acc / proj.shape[1]
    return out


def _sliced_w1_dense(D: np.ndarray, proj: np.ndarray) -> np.ndarray:
    """Sum over directions of the 1-D W1 per row of D = P - Q (R, K): one argsort per direction serves every row.

    The CDF differences of every row are built support point by support point in projected order, each
    step one contiguous add of a column of D (a row of D's transpose) to the previous step: the same
    left-to-right sums as a cumsum over D's permuted columns, without gathering the permuted (R, K)
    copy first (at 1024 x 1024, 3 ms per direction instead of 11).
    """
    DT = np.ascontiguousarray(D.T)                              # (K, R): column j of D is row j here
    K, R = DT.shape
    F = np.empty((K - 1, R))                                    # reused: no allocation per direction
    acc = np.zeros(R)
    for k in range(proj.shape[1]):  # one pass per direction, vectorised over rows
        order = np.argsort(proj[:, k], kind="stable")
        gaps = np.diff(proj[order, k])                          # (K-1,) >= 0
        # F_P - F_Q at each sorted support point but the last (where it is 0)
        if K > 1:
            F[0] = DT[order[0]]
        for i in range(1, K - 1):   # once per support point: a vector add over all rows
            np.add(F[i - 1], DT[order[i]], out=F[i])
        acc += gaps @ np.abs(F, out=F)
    return acc


def _sliced_w1_sparse(D: np.ndarray, proj: np.ndarray) -> np.ndarray:
    """As :func:`_sliced_w1_dense` touching only the non-zeros of D.

    Between two consecutive non-zeros of a row (in projected order) the CDF
    difference is constant, so each non-zero contributes |F| times the gap
    to the row's next non-zero; support points without mass drop out.
    """
    R, K = D.shape
    row, col = np.nonzero(D)                                   # row-major: grouped by row
    val = D[row, col]
    acc = np.zeros(R)
    same_row_next = np.empty(row.size, dtype=bool)
    for k in range(proj.shape[1]):
        z = proj[:, k]
        rank = np.empty(K, dtype=np.int64)
        rank[np.argsort(z, kind="stable")] = np.arange(K)
        order = np.argsort(row * K + rank[col])                # by row, then along the projection
        r_s, z_s = row[order], z[col[order]]
        cs = np.cumsum(val[order])
        # F within a row = running sum minus everything before the row's first entry
        first = np.flatnonzero(np.r_[True, r_s[1:] != r_s[:-1]])
        base = np.r_[0.0, cs][first]
        F = cs - np.repeat(base, np.diff(np.r_[first, r_s.size]))
        same_row_next[:-1] = r_s[1:] == r_s[:-1]
        same_row_next[-1] = False
        gap = np.zeros(row.size)
        gap[:-1] = z_s[1:] - z_s[:-1]
        acc += np.bincount(r_s, weights=np.abs(F) * np.where(same_row_next, gap, 0.0), minlength=R)
    return acc


def tm_emd(grid: Grid, original, anonymized, slots_per_day: int,
           n_projections: int = 50, seed: int = 0) -> float:
    """TM-EMD (lower is better).

    Row-normalised transition matrices of O and A (empty row -> self-loop);
    per row, the sliced W1 between the O row and the A row on the regions'
    (x_id, y_id) grid coordinates (grid units) with ``n_projections``
    directions drawn from ``seed``; averaged over all M rows.
    """
    T_o = transition_mass(grid, original, slots_per_day)
    T_a = transition_mass(grid, anonymized, slots_per_day)
    # A row without mass on either side is a self-loop on both, at distance 0: only the rows with mass on
    # some side are made dense (a few hundred of the 1,024 rows of a contest's set, not 8 MB per matrix).
    rows = np.flatnonzero((np.diff(T_o.indptr) > 0) | (np.diff(T_a.indptr) > 0))
    per_row = np.zeros(grid.M)
    per_row[rows] = sliced_w1_rows(row_normalise(T_o, rows), row_normalise(T_a, rows), grid.xy.astype(np.float64),
                                   random_projections(n_projections, seed))
    return float(per_row.mean())


# --------------------------------------------------------------------------
# POI accuracy
# --------------------------------------------------------------------------
def poi_accuracy(grid: Grid, original: Traces, anonymized, poi_regions,
                 r1: float = 1.0, r2: float = 2.0, chunk: int = 4096) -> float:
    """POI accuracy of the successive POI recommendation task (higher is better).

    Args:
        grid: the contest grid.
        original: O as :class:`Traces` (m, L).
        anonymized: the anonymized traces of the same events (:class:`AnonymizedTraces`
            or :class:`Traces`), same users and time ids in the same order.
        poi_regions: (n_poi,) 0-based region index of each POI.
        r1: radius (km) of the POIs a user is interested in around her true region.
        r2: radius (km) the provider serves around the anonymized region(s).
        chunk: distinct (original region, set) pairs processed at once (memory bound).

    Returns:
        Mean over events having at least one POI within r1 of the original
        region of the share of those POIs lying within r2 of any region of
        the event's anonymized set (0 for a deletion); NaN if no event has a
        nearby POI. Distances are between region centres.
    """
    anon = _as_anonymized(anonymized, grid.M)
    _check_aligned(original, anon)
    poi = np.asarray(poi_regions, dtype=np.int64).ravel()
    if poi.size and (poi.min() < 0 or poi.max() >= grid.M):
        bad = poi[(poi < 0) | (poi >= grid.M)][0]
        raise ValueError(f"POI region index {bad} is outside 0..{grid.M - 1}")
    c = np.bincount(poi, minlength=grid.M).astype(np.float64)      # POIs per region
    D = grid.distance

    n_sets = anon.sets.n_sets
    key = original.regions.astype(np.int64).ravel() * n_sets + anon.events.astype(np.int64).ravel()
    pairs, counts = np.unique(key, return_counts=True)
    # Only the rows of the original regions that occur are needed (a few hundred of the 1,024 on a
    # contest's set, not the whole (M, M) matrices each time); the sums are of whole POI counts, exact.
    uo, o_at = np.unique(pairs // n_sets, return_inverse=True)
    near_c = sp.csr_matrix((D[uo] <= r1 + RADIUS_TOLERANCE_KM) * c)  # (|uo|, M) POI counts near each o
    n_near = np.asarray(near_c.sum(axis=1)).ravel()[o_at]           # nearby POIs, per pair
    g = pairs % n_sets
    keep = n_near > 0
    o_at, g, counts, n_near = o_at[keep], g[keep], counts[keep], n_near[keep]
    if o_at.size == 0:
        return float("nan")
    sizes = anon.sets.sizes[g]
    hit = np.zeros(o_at.size)                                       # nearby POIs served, per pair
    # Single regions (the bulk): hit(o, r) = sum_p near[o, p] c_p reach[r, p], one sparse
    # product over the original and the distinct served regions (near is ~25 cells a row).
    single = np.flatnonzero(sizes == 1)
    if single.size:
        served = anon.sets.members[anon.sets.indptr[g[single]]].astype(np.int64)
        ur, r_inv = np.unique(served, return_inverse=True)
        H = np.asarray(near_c @ (D[:, ur] <= r2 + RADIUS_TOLERANCE_KM).astype(np.float64))  # D is symmetric
        hit[single] = H[o_at[single], r_inv]
    # Generalized sets: a POI is served if ANY member reaches it (an OR, not a sum).
    general = np.flatnonzero(sizes >= 2)
    if general.size:
        reach = (D <= r2 + RADIUS_TOLERANCE_KM).astype(np.float64)  # (M, M) served region -> POI region
        member = set_weights(anon.sets)
        member.data[:] = 1.0                                        # membership, not weights
        ug, g_inv = np.unique(g[general], return_inverse=True)
        by_set = np.argsort(g_inv, kind="stable")
        bounds = np.searchsorted(g_inv[by_set], np.arange(0, ug.size + chunk, chunk))
        for c_idx, start in enumerate(range(0, ug.size, chunk)):
            # served POI regions of each distinct set in the chunk, computed once per set
            covered = (member[ug[start:start + chunk]] @ reach) > 0  # (C, M)
            sel = by_set[bounds[c_idx]:bounds[c_idx + 1]]
            for s0 in range(0, sel.size, 16 * chunk):               # bounded memory per step
                part = sel[s0:s0 + 16 * chunk]
                hit[general[part]] = _served_near(near_c, o_at[general[part]], covered, g_inv[part] - start)
    # deletions (size 0) keep hit = 0
    return float(np.average(hit / n_near, weights=counts))


def _served_near(near_c: sp.csr_matrix, o: np.ndarray, covered: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per pair i: sum over POI regions p near the original region of row ``o[i]`` of ``near_c`` of (POIs
    at p) * ``covered[s[i], p]``.

    Walks only the non-zeros of ``near_c`` rows (a few dozen regions within
    r1), expanded for all pairs at once.
    """
    starts = near_c.indptr[o]
    lens = near_c.indptr[o + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(o.size)
    pair = np.repeat(np.arange(o.size), lens)
    pos = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
    cols = near_c.indices[pos]
    return np.bincount(pair, weights=near_c.data[pos] * covered[s[pair], cols], minlength=o.size)


# --------------------------------------------------------------------------
# baselines (paper Fig. 13: "Reference" and "Uniform")
# --------------------------------------------------------------------------
def reference_baseline(grid: Grid, reference: Traces, original: Traces, slots_per_day: int) -> AnonymizedTraces:
    """The reference traces used as the anonymized traces of O.

    Event (user u, original day d, slot s) takes u's reference region at
    reference day ``d mod Lr`` and slot s, where days are counted from each
    dataset's first day; with Lr = Lo this replays the reference days one by
    one. Users are matched by user id.

    Returns:
        :class:`AnonymizedTraces` with O's user ids and time ids (singletons).
    """
    S = slots_per_day
    slot_of_day(original.time_ids, S)  # validates slots_per_day
    rows = np.searchsorted(reference.user_ids, original.user_ids)
    rows = np.clip(rows, 0, max(reference.m - 1, 0))
    if reference.m == 0 or not np.array_equal(reference.user_ids[rows], original.user_ids):
        missing = np.setdiff1d(original.user_ids, reference.user_ids)
        raise ValueError(f"reference traces lack users of the original traces, e.g. user {missing[:5].tolist()}")
    ref_t = np.asarray(reference.time_ids, dtype=np.int64)
    ref_day = (ref_t - 1) // S
    ref_days = np.unique(ref_day)
    lookup = np.full((len(ref_days), S), -1, dtype=np.int64)
    lookup[np.searchsorted(ref_days, ref_day), (ref_t - 1) % S] = np.arange(len(ref_t))
    org_t = np.asarray(original.time_ids, dtype=np.int64)
    org_day = (org_t - 1) // S
    d = np.searchsorted(np.unique(org_day), org_day) % len(ref_days)
    cols = lookup[d, (org_t - 1) % S]
    if (cols < 0).any():
        t_bad = org_t[cols < 0][0]
        raise ValueError(f"reference traces lack the slot of day {(t_bad - 1) % S} needed for time id {t_bad}")
    regions = reference.regions[np.ix_(rows, cols)].astype(np.int32)
    return AnonymizedTraces(original.user_ids, original.time_ids, regions, SetTable.singletons(grid.M))


def uniform_baseline(grid: Grid, like, seed: int = 0) -> AnonymizedTraces:
    """Every event of ``like`` (Traces or AnonymizedTraces) replaced by a uniformly random region."""
    rng = np.random.default_rng(seed)
    regions = rng.integers(0, grid.M, size=(len(like.user_ids), len(like.time_ids)), dtype=np.int32)
    return AnonymizedTraces(like.user_ids, like.time_ids, regions, SetTable.singletons(grid.M))


def utility_analyses(grid: Grid, original: Traces, anonymized, slots_per_day: int,
                     poi_regions=None, *, n_projections: int = 50, seed: int = 0) -> dict:
    """All rules §13 utility figures of one anonymized set: ``{"tp_tv_top50", "tm_emd", "poi_accuracy"}``.

    ``poi_accuracy`` is None when no POIs are loaded.
    """
    return {
        "tp_tv_top50": tp_tv_top50(grid, original, anonymized, slots_per_day),
        "tm_emd": tm_emd(grid, original, anonymized, slots_per_day, n_projections, seed),
        "poi_accuracy": (None if poi_regions is None
                         else poi_accuracy(grid, original, anonymized, poi_regions)),
    }


# --------------------------------------------------------------------------
# scatter correlation and fairness
# --------------------------------------------------------------------------
def correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient of paired values (NaN if fewer than 2 or one side is constant)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"correlation needs paired values, got {x.size} and {y.size}")
    if x.size < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    den = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    if den == 0:
        return float("nan")
    return float(np.clip((dx * dy).sum() / den, -1.0, 1.0))


def fairness(values_by_team: Mapping[object, float] | Sequence[float], ddof: int = 0) -> float:
    """Standard deviation over teams of one score under a fixed sample anonymizer (paper Appendix E).

    ``values_by_team``: mapping team -> value, or a sequence of values.
    ``ddof=0`` (population SD) by default. NaN if fewer than ``ddof + 1`` values.
    """
    vals = list(values_by_team.values()) if isinstance(values_by_team, Mapping) else list(values_by_team)
    v = np.asarray(vals, dtype=np.float64)
    if v.size <= ddof:
        return float("nan")
    return float(v.std(ddof=ddof))
