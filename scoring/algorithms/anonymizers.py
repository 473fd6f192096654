"""The sample anonymizers of the judge (rules §10): A1-none ... A6-kmeans.

Every anonymizer is a pure function
``fn(grid, original: Traces, rng, **params) -> AnonymizedTraces`` of the
original traces O (``(m, L)`` 0-based regions) and a seeded
``numpy.random.Generator``; the output has the same users and time ids, and
each event is a set id into an interned :class:`~scoring.traces.SetTable`
(``0..M-1`` a single region, ``M`` a deletion ``*``, ``> M`` a generalized
set). All work is whole-array numpy: no Python loop runs per event or per
user (the k-means of A6 loops over its k clusters only while seeding and over
its iterations).

A1-A5 follow the 2019 sample programs (seed ``001``) and the paper (seed
``000`` section 4.1) exactly in distribution. By default they draw from the
``rng`` they are given. With ``sample_2019=True``, A2-A5 instead draw from
numpy's legacy ``RandomState(1)``, the stream the 2019 programs
(``SmplProg_Anonymize`` of ``pwscup/dp-locationdata``) seed with
``np.random.seed(1)``, in the programs' order and arithmetic, and so write
the official programs' exact bytes for the same input (pinned by
``tests/scoring/test_official_anonymizers.py`` on fixtures made by running
the official programs). A6 is this platform's reimplementation of
the 2019 winning anonymization from its description in the paper (section
5.2); every choice the description leaves open is documented on
:func:`kmeans_anonymize`.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import lambertw

from ..grid import Grid
from ..scores import utility
from ..traces import AnonymizedTraces, SetTable, Traces
from .attacks import visit_counts
from .registry import Param, register

__all__ = [
    "none", "mrlh", "krr", "planar_laplace", "yamaoka", "kmeans_anonymize",
    "mrlh_blocks", "krr_keep_probability", "planar_laplace_radius", "yamaoka_count",
    "kmeans", "nearest_other_hospital", "planar_laplace_2019", "OFFICIAL_SEED_2019",
]


def _check_range(name: str, value, low, high=None, *, integer=False) -> None:
    """Raise a ValueError naming the parameter, its value and the allowed range."""
    if integer and (isinstance(value, bool) or int(value) != value):
        raise ValueError(f"parameter {name}: expected an integer, got {value!r}")
    if not (value >= low and (high is None or value <= high)):  # also rejects NaN
        upper = "inf" if high is None else high
        raise ValueError(f"parameter {name}: expected a value in [{low}, {upper}], got {value!r}")


# ----------------------------------------------------------------------------------------
# The 2019 programs' random stream (sample_2019 mode)
# ----------------------------------------------------------------------------------------
#: Every 2019 sample anonymizer starts with ``np.random.seed(1)``.
OFFICIAL_SEED_2019 = 1

_SAMPLE_2019 = Param("sample_2019", bool, False,
                     "draw from numpy's RandomState(1) in the 2019 program's order and arithmetic, giving "
                     "the official program's exact output (the run's seed is then not used)")


def _official_uniforms(shape, per_event: int = 1) -> np.ndarray:
    """The 2019 programs' ``np.random.rand()`` draws: ``per_event`` per event, events in file
    order ((user_id, time_id), i.e. row-major over ``shape``), from a fresh ``RandomState(1)``.

    Returns ``shape`` (``per_event == 1``) or ``shape + (per_event,)`` float64 in [0, 1).
    """
    n = int(np.prod(shape)) * per_event
    u = np.random.RandomState(OFFICIAL_SEED_2019).random_sample(n)
    return u.reshape(shape) if per_event == 1 else u.reshape(*shape, per_event)


def _singletons(original: Traces, grid: Grid, events: np.ndarray) -> AnonymizedTraces:
    return AnonymizedTraces(original.user_ids.copy(), original.time_ids.copy(),
                            np.ascontiguousarray(events, dtype=np.int32), SetTable.singletons(grid.M))


def _check_traces(grid: Grid, original: Traces) -> None:
    if original.m and original.L and (original.regions.min() < 0 or original.regions.max() >= grid.M):
        bad = original.regions[(original.regions < 0) | (original.regions >= grid.M)][0]
        raise ValueError(f"original traces hold region index {int(bad)}, outside 0..{grid.M - 1} of the grid")


# ----------------------------------------------------------------------------------------
# A1-none
# ----------------------------------------------------------------------------------------
@register("A1-none", "anonymizer")
def none(grid: Grid, original: Traces, rng: np.random.Generator) -> AnonymizedTraces:
    """No obfuscation: every event is its original region (only the judge's pseudonymization protects it).

    Seed 001 section 2.1.1; the paper's "No Obfuscation" (section 4.1).
    """
    _check_traces(grid, original)
    return _singletons(original, grid, original.regions.copy())


# ----------------------------------------------------------------------------------------
# A2-MRLH
# ----------------------------------------------------------------------------------------
def mrlh_blocks(grid: Grid, mu_x: int, mu_y: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The MRLH merge blocks of a grid.

    Region (x, y) belongs to block (x >> mu_x, y >> mu_y): all regions sharing
    the upper bits of both axis ids, a 2^mu_x by 2^mu_y block (cut short at the
    east/north border when NX or NY is not a multiple of the block size).

    Returns:
        block: (M,) int64 block number of each region, row-major over blocks.
        order: (M,) int64 region indices sorted by (block, region).
        sizes: (n_blocks,) int64 number of regions per block.
    """
    xy = grid.xy
    nbx = -(-grid.nx // (1 << mu_x))
    nby = -(-grid.ny // (1 << mu_y))
    block = (xy[:, 1] >> mu_y) * nbx + (xy[:, 0] >> mu_x)
    order = np.lexsort((np.arange(grid.M), block))
    sizes = np.bincount(block, minlength=nbx * nby)
    return block.astype(np.int64), order.astype(np.int64), sizes.astype(np.int64)


@register("A2-MRLH", "anonymizer", params=(
    Param("mu_x", int, 1, "low bits of the x axis id dropped (block width 2^mu_x); seed 001 2.1.2"),
    Param("mu_y", int, 1, "low bits of the y axis id dropped (block height 2^mu_y); seed 001 2.1.2"),
    Param("lambda", float, 0.5, "probability of deleting an event (location hiding); seed 001 2.1.2"),
    _SAMPLE_2019,
))
def mrlh(grid: Grid, original: Traces, rng: np.random.Generator, *, mu_x: int = 1, mu_y: int = 1,
         sample_2019: bool = False, **params) -> AnonymizedTraces:
    """Merging Regions and Location Hiding (Shokri et al. 2011; seed 001 section 2.1.2).

    Each event becomes the 2^mu_x by 2^mu_y block of regions that share the
    upper bits of its x and y axis ids (the set contains the original region),
    or, independently with probability ``lambda``, a deletion ``*``.
    MRLH(0, 0, lambda) therefore outputs the single original region or ``*``.
    Each block used is interned once in the output's set table (set ids
    ``M+1, M+2, ...`` in ascending block order); a block of one region (only
    possible for mu = 0 or at a border cut) is that region's singleton id.
    Members are written in ascending region order, as the 2019 program.

    ``sample_2019``: one ``rand()`` per event from RandomState(1), deleted
    when below ``lambda`` (the program's ``if rand < Lambda``).
    """
    lam = params.pop("lambda", 0.5)
    if params:
        raise TypeError(f"A2-MRLH got unexpected parameters {sorted(params)}")
    _check_range("mu_x", mu_x, 0, max(0, (grid.nx - 1).bit_length()), integer=True)
    _check_range("mu_y", mu_y, 0, max(0, (grid.ny - 1).bit_length()), integer=True)
    _check_range("lambda", lam, 0.0, 1.0)
    _check_traces(grid, original)
    mu_x, mu_y, M = int(mu_x), int(mu_y), grid.M

    shape = original.regions.shape
    deleted = (_official_uniforms(shape) if sample_2019 else rng.random(shape)) < lam
    block, order, sizes = mrlh_blocks(grid, mu_x, mu_y)
    kept_blocks = block[original.regions[~deleted]]
    used = np.unique(kept_blocks)
    used = used[sizes[used] >= 2]                    # generalized sets hold >= 2 regions
    # set id of each block: its singleton region if it has one region, else M+1+rank among used.
    block_set = np.full(len(sizes), -1, dtype=np.int64)
    single = np.flatnonzero(sizes == 1)
    block_set[single] = order[np.searchsorted(block[order], single)]
    block_set[used] = M + 1 + np.arange(len(used))
    region_set = block_set[block]                    # (M,), -1 only for multi-region blocks not used
    events = np.where(deleted, M, region_set[original.regions]).astype(np.int32)

    members = order[np.isin(block[order], used)]     # grouped by ascending block, sorted within
    sets = SetTable.from_members(M, sizes[used], members)
    return AnonymizedTraces(original.user_ids.copy(), original.time_ids.copy(), events, sets)


# ----------------------------------------------------------------------------------------
# A3-kRR
# ----------------------------------------------------------------------------------------
def krr_keep_probability(eps: float, M: int) -> float:
    """e^eps / (M - 1 + e^eps), computed without overflow for large eps."""
    return 1.0 / (1.0 + (M - 1) * math.exp(-eps))


@register("A3-kRR", "anonymizer", params=(
    Param("eps", float, 8.0, "privacy budget per event (k-ary randomized response); seed 001 2.1.3"),
    _SAMPLE_2019,
))
def krr(grid: Grid, original: Traces, rng: np.random.Generator, *, eps: float = 8.0,
        sample_2019: bool = False) -> AnonymizedTraces:
    """k-ary randomized response (Kairouz et al. 2016; seed 001 section 2.1.3).

    Each event keeps its region with probability e^eps/(M-1+e^eps), else
    becomes one of the other M-1 regions uniformly at random: eps-DP per event.

    ``sample_2019``: one ``rand()`` u per event from RandomState(1); kept if
    u < p = e^eps/(M-1+e^eps), else the other region number
    ``int((u - p) / q)`` (q = 1/(M-1+e^eps)), skipping the original, as the
    2019 program. Where rounding would give number M-1 (one past the last
    other region; the program would write region M+1, outside the grid) the
    last other region is used.
    """
    _check_range("eps", eps, 0.0)
    _check_traces(grid, original)
    M, O = grid.M, original.regions
    if sample_2019:
        if eps > 709:
            raise ValueError(f"parameter eps: the 2019 program computes e^eps, which overflows for eps = {eps!r} "
                             "(use eps <= 709)")
        e = math.exp(eps)
        p, q = e / (M - 1 + e), 1 / (M - 1 + e)
        u = _official_uniforms(O.shape)
        keep = u < p
        shift = np.minimum(np.where(keep, 0.0, (u - p) / q).astype(np.int64), max(M - 2, 0))
        return _singletons(original, grid, np.where(keep, O, shift + (shift >= O)))
    keep = rng.random(O.shape) < krr_keep_probability(eps, M)
    if M == 1:
        return _singletons(original, grid, O.copy())
    other = rng.integers(0, M - 1, size=O.shape)
    other += other >= O                              # skip the original: uniform over the M-1 others
    return _singletons(original, grid, np.where(keep, O, other))


# ----------------------------------------------------------------------------------------
# A4-PL
# ----------------------------------------------------------------------------------------
def planar_laplace_radius(eps: float, size, rng: np.random.Generator) -> np.ndarray:
    """Radii (km) of the planar Laplace distribution with parameter ``eps`` (per km).

    Inverse of the radial CDF C(r) = 1 - (1 + eps r) e^(-eps r) (Andres et al.
    2013): r = -(W_{-1}((p - 1)/e) + 1)/eps for p uniform in [0, 1), with
    W_{-1} the lower branch of Lambert's W. The mean radius is 2/eps.
    """
    p = rng.random(size)
    w = lambertw((p - 1.0) / math.e, k=-1).real
    return np.maximum(-(w + 1.0) / eps, 0.0)       # p = 0 gives W = -1: radius 0, never negative


@register("A4-PL", "anonymizer", params=(
    Param("l", float, 4.0, "privacy level l of l-DP within r km (epsilon = l/r); seed 001 2.1.4"),
    Param("r", float, 1.0, "radius r in km of l-DP (epsilon = l/r per km); seed 001 2.1.4"),
    _SAMPLE_2019,
))
def planar_laplace(grid: Grid, original: Traces, rng: np.random.Generator, *, l: float = 4.0,
                   r: float = 1.0, sample_2019: bool = False) -> AnonymizedTraces:  # noqa: E741
    """Planar Laplace mechanism (geo-indistinguishability, Andres et al. 2013; seed 001 section 2.1.4).

    epsilon = l/r per km. Each event's region centre is displaced by a radius
    from :func:`planar_laplace_radius` in a uniformly random direction; the
    displacement in km is converted to degrees by the grid's ``km_lat`` and
    ``km_lon`` (the same flat factors as every distance of the contest), and
    the point is mapped to the region containing it, clamped to the grid
    border (points outside the box land in the nearest border region).

    ``sample_2019``: :func:`planar_laplace_2019`, the 2019 program's draws and arithmetic.
    """
    _check_range("l", l, 0.0)
    _check_range("r", r, 0.0)
    if not (l > 0 and r > 0):
        raise ValueError(f"parameters l and r must be > 0 (epsilon = l/r), got l={l!r}, r={r!r}")
    _check_traces(grid, original)
    O = original.regions
    if sample_2019:
        return _singletons(original, grid, planar_laplace_2019(grid, O, l / r))
    radius = planar_laplace_radius(l / r, O.shape, rng)
    theta = rng.random(O.shape) * (2.0 * math.pi)
    centre = grid.centres[O]                         # (m, L, 2) lat, lon in degrees
    lat = centre[..., 0] + radius * np.sin(theta) / grid.km_lat
    lon = centre[..., 1] + radius * np.cos(theta) / grid.km_lon
    return _singletons(original, grid, grid.locate(lat, lon))


def planar_laplace_2019(grid: Grid, regions: np.ndarray, eps: float) -> np.ndarray:
    """The 2019 A4-PL program's output regions for 0-based ``regions`` (any shape), bit for bit.

    Per event in file order, two ``rand()`` from RandomState(1): the angle
    ``theta = u1 * 2 * pi``, then ``p = u2`` for the radius ``-1 / eps * (W_-1((p-1)/e) + 1)``;
    the noise ``(r sin theta, r cos theta)`` km goes to degrees by ``km_lat``/``km_lon``,
    added to the cell centre ``min + width * i + width / 2``, and the cell is
    ``int((coord - min) / width)`` clamped to the grid, all in the program's
    order of operations. The box is the grid's (the program's constants are
    the Tokyo box, equal to :class:`~scoring.grid.Grid`'s default).

    numpy's vectorised sin/cos may differ from the program's ``math.sin``/``cos``
    in the last bit, which can only matter for a point within rounding of a
    cell border: those few events are recomputed with ``math`` (a loop over
    them only).
    """
    O = np.asarray(regions, dtype=np.int64)
    u = _official_uniforms(O.shape, 2)
    theta = u[..., 0] * 2 * math.pi
    w = lambertw((u[..., 1] - 1) / math.e, -1).real
    radius = -1 / eps * (w + 1)
    x_width = (grid.max_x - grid.min_x) / grid.nx
    y_width = (grid.max_y - grid.min_y) / grid.ny
    xc = grid.min_x + x_width * np.arange(grid.nx) + x_width / 2
    yc = grid.min_y + y_width * np.arange(grid.ny) + y_width / 2
    y_id, x_id = O // grid.nx, O % grid.nx

    def cells(sin_t, cos_t, yc_e, xc_e, r):
        fy = (yc_e + r * sin_t / grid.km_lat - grid.min_y) / y_width
        fx = (xc_e + r * cos_t / grid.km_lon - grid.min_x) / x_width
        return fy, fx

    fy, fx = cells(np.sin(theta), np.cos(theta), yc[y_id], xc[x_id], radius)
    near = (np.abs(fy - np.rint(fy)) < 1e-9) | (np.abs(fx - np.rint(fx)) < 1e-9)
    for idx in zip(*np.nonzero(near)):               # rare: points within rounding of a border
        t = float(theta[idx])
        fy[idx], fx[idx] = cells(math.sin(t), math.cos(t), float(yc[y_id[idx]]), float(xc[x_id[idx]]),
                                 float(radius[idx]))
    ay = np.clip(np.trunc(fy), 0, grid.ny - 1).astype(np.int64)   # int() truncates toward zero
    ax = np.clip(np.trunc(fx), 0, grid.nx - 1).astype(np.int64)
    return ay * grid.nx + ax


# ----------------------------------------------------------------------------------------
# A5-YA
# ----------------------------------------------------------------------------------------
def yamaoka_count(p: float, m: int) -> int:
    """floor(p*m), tolerant of binary rounding (0.29*100 is 28.999999999999996 in float64)."""
    return min(m, int(math.floor(p * m + 1e-9)))


@register("A5-YA", "anonymizer", params=(
    Param("p", float, 1.0, "share of users (the first floor(p*m) by user id) whose traces are shuffled; "
                           "seed 001 2.1.5"),
    _SAMPLE_2019,
))
def yamaoka(grid: Grid, original: Traces, rng: np.random.Generator, *, p: float = 1.0,
            sample_2019: bool = False) -> AnonymizedTraces:
    """Yamaoka (cheating) anonymization (Kikuchi et al. 2016; seed 001 section 2.1.5).

    The first floor(p*m) users by user id exchange their whole traces by a
    uniformly random permutation (fixed points allowed, as a shuffle draws
    them); the other users keep theirs. YA(0) is A1-none. Perfect against
    re-identification for p = 1, useless against trace inference (paper 4.2).

    ``sample_2019``: the 2019 program's ``int(m * p)`` users (its UserNum is
    the 2019 m = 2000; no rounding guard) and its permutation: ``rand_id =
    arange(n)`` shuffled by RandomState(1), user ``u`` takes the new place
    ``rand_id[u]``.
    """
    _check_range("p", p, 0.0, 1.0)
    _check_traces(grid, original)
    events = original.regions.copy()
    order = np.argsort(original.user_ids, kind="stable")
    if sample_2019:
        n = int(original.m * p)
        rand_id = np.arange(n)
        np.random.RandomState(OFFICIAL_SEED_2019).shuffle(rand_id)
        chosen = order[:n]
        events[chosen[rand_id]] = original.regions[chosen]
        return _singletons(original, grid, events)
    n = yamaoka_count(p, original.m)
    chosen = order[:n]
    events[chosen] = original.regions[chosen[rng.permutation(n)]]
    return _singletons(original, grid, events)


# ----------------------------------------------------------------------------------------
# A6-kmeans
# ----------------------------------------------------------------------------------------
def kmeans(X, k: int, rng: np.random.Generator, n_iter: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding, vectorised over points.

    Args:
        X: (n, d) float64 points, a dense array or a scipy sparse matrix (visit
            counts are sparse: a user visits a few dozen of the M regions, and
            the sparse products are ~10x faster than BLAS on a shared machine).
        k: number of clusters (at most n).
        rng: seeded generator (seeding draws only).
        n_iter: maximum Lloyd iterations (stops early when no label changes).

    Returns:
        labels: (n,) int64 cluster of each point, every cluster non-empty.
        centres: (k, d) float64 mean of each cluster's points (dense).

    An emptied cluster is re-seeded with the point farthest from its centre
    among clusters that can spare one, so exactly k clusters always come back
    (scipy's kmeans2 only warns).
    """
    sparse = sp.issparse(X)
    X = sp.csr_matrix(X, dtype=np.float64) if sparse else np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    k = int(min(k, n))
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sparse else np.einsum("ij,ij->i", X, X)

    def row(i: int) -> np.ndarray:
        return X[i].toarray().ravel() if sparse else X[i]

    def sq_dist_to(v: np.ndarray) -> np.ndarray:
        return np.maximum(sq - 2.0 * np.asarray(X @ v).ravel() + v @ v, 0.0)

    chosen = [int(rng.integers(n))]
    d2 = sq_dist_to(row(chosen[0]))
    for _ in range(1, k):                            # one step per cluster, not per point
        total = d2.sum()
        c = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        chosen.append(c)
        d2 = np.minimum(d2, sq_dist_to(row(c)))
    centres = np.stack([row(c) for c in chosen]).astype(np.float64)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max(1, n_iter)):
        dist = sq[:, None] - 2.0 * np.asarray(X @ centres.T) + np.einsum("ij,ij->i", centres, centres)[None, :]
        new = dist.argmin(axis=1)
        counts = np.bincount(new, minlength=k)
        if (counts == 0).any():
            # Re-seed each empty cluster with the point farthest from its centre among clusters
            # that can spare one (a loop over empty clusters, at most k steps).
            own = dist[np.arange(n), new]
            for c in np.flatnonzero(counts == 0):
                spare = np.where(counts[new] > 1, own, -np.inf)
                p = int(np.argmax(spare))
                counts[new[p]] -= 1
                new[p] = c
                counts[c] = 1
                own[p] = -np.inf
        if np.array_equal(new, labels):
            break
        labels = new
        onehot = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
        sums = onehot @ X
        centres = (sums.toarray() if sp.issparse(sums) else np.asarray(sums)) / counts[:, None]
    return labels, centres


def nearest_other_hospital(grid: Grid) -> np.ndarray:
    """(M,) int64: for a hospital region its nearest other hospital region, else the region itself.

    Ties go to the lowest region index. With fewer than two hospitals every
    region maps to itself.
    """
    out = np.arange(grid.M, dtype=np.int64)
    hosp = np.flatnonzero(grid.hospital_mask)
    if len(hosp) >= 2:
        d = grid.distance[np.ix_(hosp, hosp)].copy()
        np.fill_diagonal(d, np.inf)
        out[hosp] = hosp[d.argmin(axis=1)]
    return out


def _ring(grid: Grid, step: int) -> np.ndarray:
    """(M, 8*step) int64 regions exactly ``step`` grid steps (Chebyshev) from each region; -1 off-grid."""
    steps = np.arange(-step, step + 1)
    dx, dy = np.meshgrid(steps, steps)
    keep = np.maximum(np.abs(dx), np.abs(dy)) == step
    dx, dy = dx[keep], dy[keep]
    x = grid.xy[:, 0:1] + dx[None, :]
    y = grid.xy[:, 1:2] + dy[None, :]
    inside = (x >= 0) & (x < grid.nx) & (y >= 0) & (y < grid.ny)
    return np.where(inside, y * grid.nx + x, -1)


def _ring_targets(grid: Grid, step: int, pair_user: np.ndarray, pair_region: np.ndarray,
                  pair_of_event: np.ndarray, counts: np.ndarray, means: np.ndarray,
                  occupied, rng: np.random.Generator) -> np.ndarray:
    """One candidate region per event on the ring ``step`` grid steps (Chebyshev) from its region.

    The candidate is drawn with probability proportional to the first of
    these weights over the ring's regions r that is not all zero:

    1. the deficit max(0, mu_c(r) - C_i(r)) (regions the user's cluster visits
       more than the user), restricted to regions where no cluster mate is at
       the event's time (only when ``occupied`` is given);
    2. uniform over the ring regions where no cluster mate is at that time
       (only when ``occupied`` is given);
    3. the deficit alone;
    4. uniform over the ring's in-grid regions;
    5. the event's own region (a ring entirely off the grid).

    Args:
        pair_user, pair_region: (P,) user row and region of each distinct (user, region) pair.
        pair_of_event: (N,) pair index of each event.
        counts: (m, M) visit counts of each user; means: (m, M) mean visit counts of each user's cluster.
        occupied: None, or a function (N, K) candidate regions -> (N, K) bool, True where a
            cluster mate of the event's user is in that region at the event's time.

    Returns:
        (N,) int64 candidate region of each event.
    """
    cand = _ring(grid, step)[pair_region]                          # (P, K), per pair: deficits are per pair
    valid_p = cand >= 0
    safe_p = np.where(valid_p, cand, pair_region[:, None])
    deficit_p = np.where(valid_p, np.maximum(means[pair_user[:, None], safe_p]
                                             - counts[pair_user[:, None], safe_p], 0.0), 0.0)
    safe = safe_p[pair_of_event]                                   # (N, K)
    valid = valid_p[pair_of_event]
    deficit = deficit_p[pair_of_event]
    if occupied is not None:
        free = valid & ~occupied(safe)
        tiers = [lambda rows: deficit[rows] * free[rows], lambda rows: free[rows].astype(np.float64)]
    else:
        tiers = []
    tiers += [lambda rows: deficit[rows], lambda rows: valid[rows].astype(np.float64)]
    rows = np.arange(len(pair_of_event))
    weight = np.zeros(deficit.shape)
    for tier in tiers:                                             # at most four passes, each over the rows left
        weight[rows] = tier(rows)
        rows = rows[weight[rows].sum(axis=1) == 0]
        if not len(rows):
            break
    weight[rows, 0] = 1.0                                          # ring off the grid: safe = own region
    cdf = np.cumsum(weight, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random(len(pair_of_event))
    choice = np.minimum((cdf <= u[:, None]).sum(axis=1), weight.shape[1] - 1)
    # a zero-weight slot can only be hit through round-off at a row's end: take the row's last positive slot
    every = np.arange(len(choice))
    last_positive = weight.shape[1] - 1 - np.argmax(weight[:, ::-1] > 0, axis=1)
    choice = np.where(weight[every, choice] > 0, choice, last_positive)
    return safe[every, choice]


def _mates_occupancy(labels: np.ndarray, O: np.ndarray, M: int):
    """A lookup: is any user of the event's cluster in region r at the event's time?

    Keys (cluster, time column, region) of all events, sorted once; a
    candidate (N, K) array is answered by one searchsorted. The event's own
    user is never at a candidate (candidates differ from its region).

    Why A6-kmeans avoids the mates' positions (measured on the Osaka set): a
    re-identification attack that is fooled picks a cluster mate v and
    publishes this trace as v's; had the events moved to where v actually is
    at those times, the fooled attacker would still infer v's trace well.
    Pulling the visit *counts* toward the cluster but the per-time *positions*
    away from the mates keeps the first effect and removes the second (against
    the six sample attacks at s_U = 0.705, mean of 5 seeds: s_T,min 0.863 ->
    0.872, above A4-PL's 0.868 at the same utility; s_I,min unchanged at 0.993).
    """
    m, L = O.shape
    cluster_time = (np.repeat(labels, L) * L + np.tile(np.arange(L), m)) * M   # (N,) key base per event
    keys = np.unique(cluster_time + O.ravel())

    def occupied(candidates: np.ndarray) -> np.ndarray:
        q = cluster_time[:, None] + candidates
        pos = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        return keys[pos] == q

    return occupied


def _check_kmeans(grid: Grid, *, k, s_req, margin, rings, iterations, lambda_u) -> None:
    """A6-kmeans's parameters in their ranges, else a ValueError naming the parameter."""
    _check_range("k", k, 1, integer=True)
    _check_range("s_req", s_req, 0.0, 1.0)
    _check_range("margin", margin, 0.0, 1.0)
    _check_range("rings", rings, 1, max(grid.nx, grid.ny), integer=True)
    _check_range("iterations", iterations, 1, integer=True)
    _check_range("lambda_u", lambda_u, 0.0)
    if lambda_u <= 0:
        raise ValueError(f"parameter lambda_u: expected a positive distance in km, got {lambda_u!r}")


class _UtilityBudget:
    """A6-kmeans's moves within the utility it may spend: the output must keep s_U >= s_req + margin.

    Every output is a single region, for which both utility conventions give u = max(0, 1 - d/lambda_U),
    so an event moved by d km costs min(1, d/lambda_U) and the budget is (1 - s_req - margin) * m * L.
    Moves are taken greedily in one fixed uniformly random event ``order``, each tier (:meth:`take`)
    taking the longest prefix whose summed cost fits (exactly what a binary search on the share of events
    moved would find, in one pass). A later tier may move an event again (ring 1 to ring 2), paying only
    the extra cost. If the first tier alone exceeds the budget, a random subset that fits is kept and
    nothing else moves.

    ``flat``: (m*L,) original regions; ``distance``: (M, M) km; ``order``: (m*L,) a permutation.
    """

    def __init__(self, flat: np.ndarray, distance: np.ndarray, lambda_u: float, budget: float,
                 order: np.ndarray):
        self.flat, self.distance, self.lambda_u, self.order = flat, distance, lambda_u, order
        self.out = flat.copy()                      # the output region of each event
        self.cost = np.zeros(flat.size)             # current utility loss of each event
        self.remaining = budget

    def take(self, candidates: np.ndarray, new_region: np.ndarray) -> bool:
        """Apply the longest prefix (in ``order``) of the candidate moves (``candidates``: (m*L,) bool;
        ``new_region``: (m*L,) regions) that fits the budget left; True if all fit."""
        idx = self.order[candidates[self.order]]
        extra = np.minimum(1.0, self.distance[self.flat[idx], new_region[idx]] / self.lambda_u) - self.cost[idx]
        n = int(np.searchsorted(np.cumsum(extra), self.remaining, side="right"))
        chosen = idx[:n]
        self.out[chosen] = new_region[chosen]
        self.remaining -= extra[:n].sum()
        self.cost[chosen] += extra[:n]
        return n == len(idx)


@register("A6-kmeans", "anonymizer", params=(
    Param("k", int, 100, "number of k-means clusters of visit-count vectors; paper 5.2"),
    Param("s_req", float, 0.7, "utility requirement the output must meet; paper 3.4 / rules §7"),
    Param("margin", float, 0.005, "utility kept above s_req, so the output stays valid with room to spare"),
    Param("rings", int, 2, "a moved event goes at most this many grid steps (Chebyshev) from its region"),
    Param("hospitals", bool, True, "replace each hospital event by the nearest other hospital region; paper 5.2"),
    Param("avoid_mates", bool, True, "prefer moves to regions where no cluster mate is at that time"),
    Param("iterations", int, 30, "maximum Lloyd iterations of the k-means"),
    Param("lambda_u", float, 2.0, "utility distance scale lambda_U in km; rules §7"),
))
def kmeans_anonymize(grid: Grid, original: Traces, rng: np.random.Generator, *, k: int = 100,
                     s_req: float = 0.7, margin: float = 0.005, rings: int = 2, hospitals: bool = True,
                     avoid_mates: bool = True, iterations: int = 30, lambda_u: float = 2.0) -> AnonymizedTraces:
    """k-means anonymization, the 2019 best trace-protection anonymizer (paper section 5.2).

    Steps (paper 5.2), with the choices the paper leaves open:

    1. Cluster users by their visit-count vectors C (``(m, M)`` counts of each
       region over the original slots; all users have the same number of
       events, so counts and visit probabilities cluster alike) with k-means,
       ``k`` clusters (:func:`kmeans`, k-means++ seeding from ``rng``).
    2. Pull each trace toward its cluster's mean visit-count vector mu_c with
       small perturbations. An event of user i at region o gets a candidate
       region on the ring one grid step around o (0.34-0.49 km on the 2019
       grids), drawn with probability proportional to the deficit
       max(0, mu_c(r) - C_i(r)): regions the cluster visits more than the
       user does. So the user's vector approaches mu_c, and the events land
       where cluster mates, not the user, are seen, which is what misleads
       visit-probability re-identification (a region the user never visited
       costs the true user log(1e-8) in I2's likelihood).
       With ``avoid_mates`` (default), the draw is restricted to ring regions
       where no cluster mate is at that very time (why: :func:`_mates_occupancy`).
       Fallbacks, in order: any mate-free ring region, the deficit alone, a
       uniformly random ring region (:func:`_ring_targets`).
       Ring 2, ..., ``rings`` candidates are drawn the same way and used to
       spend what budget ring 1 leaves (below).
    3. Replace every event at a hospital region by the nearest other hospital
       region (:func:`nearest_other_hospital`): hospital events weigh 10 in
       trace inference, and the move stays short.

    The moves are taken within the utility budget (:class:`_UtilityBudget`):
    hospital replacements first, then the ring-1 moves of the other events,
    then, while budget remains, upgrades to ring 2..``rings``. The final s_U
    is checked with :func:`scoring.scores.utility`.

    On the 2019 Osaka practice set (40 slots) every event moves one ring
    (s_U ~ 0.79) and about 40 % then move to ring 2 (s_U = s_req + margin).
    Only the original traces are used (an anonymizer gets no reference traces).
    """
    _check_kmeans(grid, k=k, s_req=s_req, margin=margin, rings=rings, iterations=iterations, lambda_u=lambda_u)
    _check_traces(grid, original)
    M, O = grid.M, original.regions.astype(np.int64)
    m, L = O.shape
    n_events = m * L
    if n_events == 0:
        return _singletons(original, grid, O)
    flat = O.ravel()

    # (1) k-means on visit-count vectors.
    rows = np.repeat(np.arange(m), L)
    counts = visit_counts(original, M)                             # (m, M) float64
    labels, centres = kmeans(sp.csr_matrix(counts), int(k), rng, int(iterations))
    means = centres[labels]                                        # (m, M) mu_c of each user's cluster

    # (2) one candidate move per event and ring (deficits computed once per (user, region) pair).
    pair, pair_of_event = np.unique(rows * M + flat, return_inverse=True)
    pair_user, pair_region = pair // M, pair % M
    occupied = _mates_occupancy(labels, O, M) if avoid_mates else None
    targets = [_ring_targets(grid, t, pair_user, pair_region, pair_of_event, counts, means, occupied, rng)
               for t in range(1, int(rings) + 1)]
    budget = _UtilityBudget(flat, grid.distance, lambda_u, (1.0 - (s_req + margin)) * n_events,
                            rng.permutation(n_events))

    # (3) hospital replacements first, then (2) ring by ring.
    is_hosp = grid.hospital_mask[flat] if hospitals else np.zeros(n_events, dtype=bool)
    all_fit = budget.take(is_hosp, nearest_other_hospital(grid)[flat])
    for target in targets:
        if not all_fit:
            break
        all_fit = budget.take(~is_hosp, target)

    anon = _singletons(original, grid, budget.out.reshape(m, L))
    achieved = utility(grid, original, anon, lambda_u=lambda_u)  # the judge's own scorer has the last word
    if achieved < s_req:  # pragma: no cover - the budget above is the same formula
        raise RuntimeError(f"A6-kmeans produced s_U = {achieved} < s_req = {s_req}")
    return anon
