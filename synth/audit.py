"""Privacy audit of the DP synthesizer (``coloc``): every noised statistic against neighbouring training sets.

A Laplace mechanism is epsilon-DP only if the statistic it noises changes by
at most the declared sensitivity between *any* two neighbouring training
sets (one user added or removed, with her trace and her friendships). This
module measures that change on real training sets instead of trusting the
argument: it removes each user in turn (and adds each user of a second set),
recomputes the exact statistics with the very functions training uses
(:func:`synth.coloc.exact_statistics`) and compares the change with the
sensitivity the model's ledger declares:

==========================  ======================================  ==========================
statistic                   change measured                          declared (ledger)
==========================  ======================================  ==========================
friendship probability p    ``|p(D) - p(D')|``                       ``2 / min_users``
co-location counts Q        ``sum |Q(D) - Q(D')|``                   ``c``
Q under Privelet            ``sum_coef W |coef(D) - coef(D')|``      ``h c``
transition counts           ``sum |counts(D) - counts(D')|``         ``c_trans``
==========================  ======================================  ==========================

Usage::

    report = audit(traces, grid, slots_per_day=20, c=5, c_trans=5, min_users=100)
    assert report.holds, report.violations()

The loop runs over the users removed or added (one recomputation of the
vectorised statistics each), never over user pairs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta

from scoring.grid import Grid, TimeAxis
from scoring.traces import Traces
from synth import coloc
from synth.city import CityModel


def without_user(traces: Traces, friends: np.ndarray | None, i: int) -> tuple[Traces, np.ndarray | None]:
    """The neighbouring training set without user row ``i``: her trace and her friendships removed."""
    keep = np.arange(traces.m) != i
    sub = Traces(traces.user_ids[keep], traces.time_ids, np.asarray(traces.regions)[keep])
    if friends is None:
        return sub, None
    f = np.asarray(friends, dtype=np.int64).reshape(-1, 2)
    f = f[(f != i).all(axis=1)]
    return sub, f - (f > i)


def with_user(traces: Traces, friends: np.ndarray | None, extra: Traces, j: int,
              extra_friends: np.ndarray | None = None) -> tuple[Traces, np.ndarray | None]:
    """The neighbouring training set with row ``j`` of ``extra`` added (same time ids) as the last user;
    ``extra_friends`` (k,) rows of ``traces`` she is friends with (given graphs only)."""
    if not np.array_equal(extra.time_ids, traces.time_ids):
        raise ValueError("the added user's trace must have the training set's time ids")
    uid = int(traces.user_ids.max()) + 1 + int(extra.user_ids[j])   # a fresh id
    sup = Traces(np.append(traces.user_ids, uid), traces.time_ids,
                 np.vstack([np.asarray(traces.regions), np.asarray(extra.regions)[j:j + 1]]))
    if friends is None:
        return sup, None
    new = np.asarray(extra_friends if extra_friends is not None else [], dtype=np.int64)
    pairs = np.stack([new, np.full(len(new), traces.m)], axis=1)
    return sup, np.vstack([np.asarray(friends, dtype=np.int64).reshape(-1, 2), pairs])


def privelet_change(Q0: np.ndarray, Q1: np.ndarray, hierarchy: coloc.Hierarchy) -> float:
    """sum over coefficients of W |delta coef|: the change Privelet's noise is calibrated on."""
    d = hierarchy.transform(Q1 - Q0)
    return float(sum((np.where(np.isinf(w), 0.0, w)[None, :] * np.abs(c)).sum() for c, w in
                     zip(d, hierarchy.weights())))


@dataclass
class AuditReport:
    """Largest change of every statistic over the neighbours tried, and the declared sensitivities."""

    declared: dict
    largest: dict = field(default_factory=dict)
    worst_user: dict = field(default_factory=dict)
    neighbours: int = 0

    def record(self, name: str, change: float, who) -> None:
        if change > self.largest.get(name, -1.0):
            self.largest[name] = float(change)
            self.worst_user[name] = who

    def violations(self) -> dict:
        """{statistic: (largest change, declared)} where the change exceeds the declared sensitivity."""
        return {k: (v, self.declared[k]) for k, v in self.largest.items() if v > self.declared[k] + 1e-12}

    @property
    def holds(self) -> bool:
        return not self.violations()


def declared_sensitivities(ledger: list, hierarchy: coloc.Hierarchy | None = None) -> dict:
    """{statistic: declared sensitivity} read from a coloc model's ledger entries (what training charged)."""
    p, q, tpm = ledger
    out = {"p": float(p["sensitivity"]), "transitions": float(tpm["sensitivity"])}
    if hierarchy is not None:
        out["Q privelet"] = float(q["sensitivity"])
        out["Q"] = float(q["sensitivity"]) / hierarchy.height
    else:
        out["Q"] = float(q["sensitivity"])
    return out


def audit(traces: Traces, grid: Grid, *, slots_per_day: int, friends: np.ndarray | None = None, c: int = 5,
          c_trans: int = 5, min_meetings: int = 3, min_users: int | None = None, salt: int = 0,
          hierarchy: coloc.Hierarchy | None = None, remove=None, add: Traces | None = None,
          add_friends=None, statistics=coloc.exact_statistics, ledger: list | None = None) -> AuditReport:
    """Remove each user (rows ``remove``, default all) and add each user of ``add``; measure every statistic.

    Args:
        friends: a given friendship graph (E, 2) or None (inferred from the traces).
        min_users: the public bound of p's noise (default: the smaller neighbour's size, the tightest
            bound the training set allows).
        hierarchy: also audit Privelet's weighted coefficients over this hierarchy.
        add_friends: per added user, the rows of ``traces`` she befriends (given graphs).
        statistics: the exact-statistics function audited (tests pass a former rule to show the
            audit catches it).
        ledger: the ledger entries whose sensitivities are checked (default: the ones training
            declares for these parameters, :func:`synth.coloc.ledger_entries`).
    """
    T = int(slots_per_day)
    n = traces.m
    if min_users is None:
        min_users = n - 1
    if ledger is None:
        ledger = coloc.ledger_entries(eps1=1.0, eps2=1.0, eps3=1.0, c=c, c_trans=c_trans, min_users=min_users,
                                      inferred=friends is None,
                                      q_sensitivity=None if hierarchy is None else float(hierarchy.height * c))
    report = AuditReport(declared=declared_sensitivities(ledger, hierarchy))
    kw = dict(slots_per_day=T, c=c, c_trans=c_trans, min_meetings=min_meetings, salt=salt)
    base = statistics(traces, grid, friends=friends, **kw)

    def compare(other: dict, who) -> None:
        report.neighbours += 1
        report.record("p", abs(base["p"] - other["p"]), who)
        report.record("Q", float(np.abs(base["Q"] - other["Q"]).sum()), who)
        report.record("transitions", float(np.abs(base["transitions"] - other["transitions"]).sum()), who)
        if hierarchy is not None:
            report.record("Q privelet", privelet_change(base["Q"], other["Q"], hierarchy), who)

    for i in (range(n) if remove is None else remove):
        sub, f = without_user(traces, friends, int(i))
        compare(statistics(sub, grid, friends=f, **kw), ("removed", int(traces.user_ids[i])))
    if add is not None:
        for j in range(add.m):
            sup, f = with_user(traces, friends, add, j, None if add_friends is None else add_friends[j])
            compare(statistics(sup, grid, friends=f, **kw), ("added", j))
    return report


# ---------------------------------------------------------------------------
# Empirical audit: a distinguishing game on the released Q'
# ---------------------------------------------------------------------------
#: Trainings per neighbour of the fast audit (``python -m synth audit --empirical``, the unit test);
#: the slow test and ``--trials`` run more.
EMPIRICAL_TRIALS = 5000
#: Trainings drawn at once: (chunk, T, M) float64, 40 MB on the contest's 32 x 32 grid and 20 slots.
CHUNK = 250


def hub_neighbours(traces: Traces, grid: Grid, *, slots_per_day: int, c: int = 5, friends_k: int = 20,
                   min_meetings: int = 3, seed: int = 0) -> tuple[Traces, Traces]:
    """(D without the hub, D with the hub): the worst case of Q's sensitivity on a real-ish set.

    The hub (a fresh user, last row) follows ``friends_k`` users of ``traces`` in turn, one per instant, so
    she meets each of them at least ``min_meetings`` times (inferred friends) and is co-located at every
    instant; at each of the c public read instants she stands with a friend at a region where no pair of
    friends is already, so adding her creates one new co-location site per read instant: Q changes by c,
    the declared sensitivity. Needs at least ``friends_k * min_meetings`` instants.
    """
    regions = np.asarray(traces.regions)
    n, L = regions.shape
    if L < friends_k * min_meetings:
        raise ValueError(f"{L} instants are too few for {friends_k} friends met {min_meetings} times each")
    base = coloc.exact_statistics(traces, grid, slots_per_day=slots_per_day, c=c, min_meetings=min_meetings)
    read = base["read"]
    col, x = coloc.colocation_sites(regions[:, read], base["edges"])
    taken = set(zip(read[col].tolist(), x.tolist()))
    rng = np.random.default_rng(seed)
    friends = rng.choice(np.flatnonzero((regions >= 0).all(axis=1)), size=friends_k, replace=False)
    hub = regions[friends[np.arange(L) % friends_k], np.arange(L)].copy()
    for t in read.tolist():        # c instants: a free region among her friends' (the reads are few)
        free = [int(regions[f, t]) for f in friends if (t, int(regions[f, t])) not in taken]
        if free:
            hub[t] = free[0]
    with_hub = Traces(np.append(traces.user_ids, int(traces.user_ids.max()) + 1), traces.time_ids,
                      np.vstack([regions, hub[None, :].astype(regions.dtype)]))
    return traces, with_hub


def released_q(Q: np.ndarray, grid: Grid, trials: int, cells: np.ndarray, *, c: int, eps2: float,
               rng: np.random.Generator, release=None) -> np.ndarray:
    """(trials, len(cells)) the released Q' of ``trials`` trainings on exact Q (T, M), at ``cells`` (flat).

    Each chunk stacks :data:`CHUNK` copies of Q as rows and draws the whole Q' of every copy through
    ``release`` (default :func:`synth.coloc._noisy_colocations`, the function :func:`synth.coloc.train`
    calls, looked up at call time so a test may patch it), Laplace mechanism; only ``cells`` are kept.
    """
    release = release or coloc._noisy_colocations
    T, M = Q.shape
    out = np.empty((trials, len(cells)))
    for lo in range(0, trials, CHUNK):
        k = min(CHUNK, trials - lo)
        stacked = np.broadcast_to(Q, (k, T, M)).reshape(k * T, M)
        noisy = release(stacked, grid, mechanism="laplace", hierarchy="blocks", c=c, eps2=eps2, rng=rng)[0]
        out[lo:lo + k] = np.asarray(noisy).reshape(k, T * M)[:, cells]
    return out


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided upper 1 - ``alpha`` Clopper-Pearson bound of a proportion with ``k`` events in ``n`` trials."""
    return 1.0 if k >= n else float(beta.ppf(1.0 - alpha, k + 1, n - k))


@dataclass
class EmpiricalAudit:
    """The distinguishing game's outcome.

    Attributes:
        trials: trainings per neighbour; declared: the Q' mechanism's declared epsilon (eps2);
        change: L1 change of Q between the neighbours (c when the worst case is reached);
        threshold: the test guesses "with the hub" when its log-likelihood ratio is at least this;
        false_positives / false_negatives: counts over the trials; fpr_upper / fnr_upper: their one-sided
        Clopper-Pearson upper bounds at 1 - alpha/2 each (so both hold together at ``confidence``);
        eps_lower: log((1 - delta - fnr_upper) / fpr_upper), the empirical lower bound on epsilon.
    """

    trials: int
    declared: float
    change: float
    threshold: float
    false_positives: int
    false_negatives: int
    fpr_upper: float
    fnr_upper: float
    eps_lower: float
    confidence: float = 0.95
    delta: float = 0.0
    seconds: float = 0.0

    @property
    def holds(self) -> bool:
        """True when the game found no more privacy loss than declared."""
        return self.eps_lower <= self.declared

    def lines(self) -> list[str]:
        """The report as printed by ``python -m synth audit --empirical``."""
        return [f"distinguishing game on Q' (Laplace), {self.trials} trainings per neighbour, "
                f"Q changes by {self.change:g} between them",
                f"test: log-likelihood ratio >= {self.threshold:.4f}; false positives {self.false_positives}, "
                f"false negatives {self.false_negatives} (of {self.trials} each)",
                f"upper bounds ({self.confidence:.0%} jointly, Clopper-Pearson): FPR {self.fpr_upper:.5f}, "
                f"FNR {self.fnr_upper:.5f}",
                f"empirical epsilon lower bound {self.eps_lower:.3f} vs declared eps2 {self.declared:g}: "
                + ("holds" if self.holds else "VIOLATED") + f" ({self.seconds:.1f} s)"]


def empirical_audit(without: Traces, with_hub: Traces, grid: Grid, *, slots_per_day: int, trials: int =
                    EMPIRICAL_TRIALS, c: int = 5, eps2: float = 1.0, min_meetings: int = 3, seed: int = 0,
                    confidence: float = 0.95, release=None) -> EmpiricalAudit:
    """Train Q' ``trials`` times on each neighbour and try to tell which one each release came from.

    The test is the declared mechanism's own: the log-likelihood ratio of Laplace(c / eps2) noise on the
    cells where the neighbours' Q differ, sum_k (|x_k - q0_k| - |x_k - q1_k|) / b, which is at most
    |Q1 - Q0|_1 / b; the guess is "with the hub" when it reaches that maximum (fixed before any draw,
    the region where an eps-DP mechanism's likelihood ratio is largest). A correct mechanism leaves
    TPR / FPR <= e^eps there; a release with less noise than declared (or none) exceeds it. The bound
    uses both rates' Clopper-Pearson bounds at 1 - alpha/2 each, alpha = 1 - ``confidence``.
    """
    t0 = time.perf_counter()
    kw = dict(slots_per_day=slots_per_day, c=c, min_meetings=min_meetings)
    q0 = coloc.exact_statistics(without, grid, **kw)["Q"]
    q1 = coloc.exact_statistics(with_hub, grid, **kw)["Q"]
    cells = np.flatnonzero((q1 != q0).ravel())
    change = float(np.abs(q1 - q0).sum())
    if change == 0:
        raise ValueError("the neighbours' Q are equal: this pair cannot reveal anything")
    scale = c / eps2
    a0, a1 = q0.ravel()[cells], q1.ravel()[cells]
    rng = np.random.default_rng(seed)

    def llr(x):
        return (np.abs(x - a0) - np.abs(x - a1)).sum(axis=1) / scale

    threshold = change / scale - 1e-9
    fp = int((llr(released_q(q0, grid, trials, cells, c=c, eps2=eps2, rng=rng, release=release)) >= threshold)
             .sum())
    fn = int((llr(released_q(q1, grid, trials, cells, c=c, eps2=eps2, rng=rng, release=release)) < threshold)
             .sum())
    alpha = (1.0 - confidence) / 2
    fpr_u = clopper_pearson_upper(fp, trials, alpha)
    fnr_u = clopper_pearson_upper(fn, trials, alpha)
    eps_lb = float(np.log((1.0 - fnr_u) / fpr_u)) if fnr_u < 1.0 else 0.0
    return EmpiricalAudit(trials, eps2, change, float(threshold), fp, fn, fpr_u, fnr_u, max(eps_lb, 0.0),
                          confidence=confidence, seconds=time.perf_counter() - t0)


def city_training_set(users: int = 200, days: int = 4, seed: int = 1) -> tuple[Grid, Traces]:
    """A real-ish training set: the built-in city's people on the contest's grid and day (20 half-hour
    slots from 8:00), ``users`` x ``days``."""
    grid = Grid()
    axis = TimeAxis(slots_per_day=20, start_minute=480, slot_minutes=30, ref_days=days, org_days=days)
    return grid, CityModel(grid, seed=0).simulate(users, days, time_axis=axis, seed=seed)


def main(args) -> int:
    """``python -m synth audit [--empirical]``: the sensitivity audit (every user of a city set removed,
    and the hub added) or the distinguishing game on the hub's neighbours; exit status 1 if it fails."""
    grid, traces = city_training_set(args.users, args.days, args.seed)
    without, with_hub = hub_neighbours(traces, grid, slots_per_day=20, c=args.c, friends_k=args.friends,
                                       seed=args.seed)
    if args.empirical:
        result = empirical_audit(without, with_hub, grid, slots_per_day=20, trials=args.trials, c=args.c,
                                 eps2=args.eps2, seed=args.seed)
        print(f"city set: {traces.m} users x {args.days} days, the hub with {args.friends} friends added")
        print("\n".join(result.lines()))
        return 0 if result.holds else 1
    hub = Traces(with_hub.user_ids[-1:], with_hub.time_ids, np.asarray(with_hub.regions)[-1:])
    report = audit(traces, grid, slots_per_day=20, c=args.c, add=hub)
    print(f"city set: {traces.m} users x {args.days} days; {report.neighbours} neighbours (each user removed, "
          "the hub added)")
    for name, declared in report.declared.items():
        print(f"{name}: largest change {report.largest.get(name, 0.0):g}, declared sensitivity {declared:g}")
    print("holds" if report.holds else f"VIOLATED: {report.violations()}")
    return 0 if report.holds else 1
