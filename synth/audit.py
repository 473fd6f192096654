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

from dataclasses import dataclass, field

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces
from synth import coloc


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
