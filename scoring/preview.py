"""The judge's attacks as a team sees them before the deadline (a privacy preview).

In 2019 the teams ran the sample attack programs against their own
anonymized sets by hand, with their own reference traces, to estimate the
privacy they would get. :func:`preview` does exactly what the judge does at
phase close, on one set: pseudonymize it, run the judge's attacks (default
I1-I3 and T1-T3, rules §10) with the reference traces R, and score them
against the secret ID table and the original traces O. It also keeps, per
user, what each attack learnt (:class:`AttackOutcome`), which is what a team
needs to see *which* users leak (:func:`per_user_rows`, :func:`leak_map`).

Nothing here is a different judge: :func:`run_attack` is the one function
that runs a registered attack with the contest's clock and scores it, so a
preview with the same pseudonymized set and seeds gives the same numbers as
the judge.

Shapes: m users, L original time ids, M regions. Users are always reported
in the original traces' user order (``original.user_ids``), whatever the
pseudonym order was.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np
from scipy.special import stdtrit

from . import scores
from .algorithms.attacks import home_slots, parse_slots, slot_mask
from .algorithms.registry import Algorithm, get, judge_defaults
from .grid import Grid, TimeAxis
from .pseudonymize import Pseudonymized, pseudonymize
from .seeds import derived_seed
from .traces import AnonymizedTraces, Traces
from .uncertainty import scored_attack
from .vocabulary import AttackKind


@dataclass(frozen=True)
class AttackOutcome:
    """One attack's result on one pseudonymized set.

    Attributes:
        name: registered algorithm name (e.g. ``I2-VisitProb``).
        kind: ``reidentification`` or ``trace_inference``.
        seed: the seed it ran with.
        params: the parameter values it ran with.
        output: the etable ((m,) estimated user id per pseudonym, ascending
            pseudonyms) or the estimated traces (:class:`Traces`, users in
            original order).
        score: s_I or s_T of the output.
        reidentified: (m,) bool, per user in original order, True where the
            attack named that user's pseudonym correctly (re-identification only).
        error: (m,) float64, per user in original order, the user's
            hospital-weighted mean of min(1, d/lambda_T) over its events
            (trace inference only; 1 = every event at least lambda_T off).
        contribution: (m,) float64 per user such that ``contribution.sum() ==
            score`` (up to rounding): ``(1 - reidentified) / m`` for s_I, the
            user's weighted error over the set's total weight for s_T.
        parts: the score's per-user parts as results store them
            (``scoring.uncertainty.per_user_attack``: ``num`` and, for s_T, ``den``;
            users in ascending user id).
    """

    name: str
    kind: str
    seed: int
    params: dict
    output: object
    score: float
    reidentified: np.ndarray | None = None
    error: np.ndarray | None = None
    contribution: np.ndarray = field(default_factory=lambda: np.zeros(0))
    parts: dict = field(default_factory=dict)


def _user_order(original: Traces, user_ids_of_pseudonyms: np.ndarray) -> np.ndarray:
    """(m,) index of each pseudonym's user in ``original.user_ids`` (ascending user ids)."""
    return np.searchsorted(original.user_ids, user_ids_of_pseudonyms)


def reidentification_outcome(original: Traces, true_users: np.ndarray, estimate: np.ndarray) -> tuple:
    """Per-user view of an etable: (score, reidentified (m,), contribution (m,), parts) in original user
    order."""
    true_users = np.asarray(true_users, dtype=np.int64)
    correct_by_pseudonym = np.asarray(estimate, dtype=np.int64) == true_users
    reidentified = np.zeros(original.m, dtype=bool)
    reidentified[_user_order(original, true_users)] = correct_by_pseudonym
    score, parts = scored_attack(AttackKind.REIDENTIFICATION, None, estimate, true_users=true_users)
    return score, reidentified, (~reidentified).astype(np.float64) / original.m, parts


def trace_inference_outcome(grid: Grid, original: Traces, estimate: Traces, *, lambda_t: float = 2.0,
                            hospital_weight: float = 10.0) -> tuple:
    """Per-user view of estimated traces: (score, error (m,), contribution (m,), parts)."""
    score, parts = scored_attack(AttackKind.TRACE_INFERENCE, grid, estimate, truth=original, lambda_t=lambda_t,
                                 hospital_weight=hospital_weight)
    num, den = parts["num"], parts["den"]
    return score, num / den, num / den.sum(), parts


def run_attack(algorithm: Algorithm | str, grid: Grid, reference: Traces, pub: AnonymizedTraces, *, seed: int,
               original: Traces, true_users: np.ndarray, axis: TimeAxis | None = None, lambda_t: float = 2.0,
               hospital_weight: float = 10.0, params: dict | None = None) -> AttackOutcome:
    """Run one attack as the judge does and score it.

    Args:
        algorithm: a registered re-identification or trace-inference attack (or its name).
        grid: the contest grid.
        reference: reference traces R of the set's users, regions (m, S*Lr).
        pub: the pseudonymized traces (pseudonyms m+1..2m ascending), events (m, S*Lo).
        seed: the attack's seed (the judge derives one per contest, set and attack).
        original: original traces O (the truth), regions (m, S*Lo).
        true_users: (m,) the secret ID table f: user id of each pseudonym, ascending pseudonyms.
        axis: the contest's clock; the slot-of-day attacks (I3/T3) follow it
            (default: the 2019 clock).
        params: parameter overrides on top of the axis' values.
    """
    if isinstance(algorithm, str):
        algorithm = get(algorithm)
    resolved = algorithm.resolve({**algorithm.axis_params(axis or TimeAxis()), **(params or {})})
    out = algorithm.run(grid, reference, pub, seed=seed, **resolved)
    if algorithm.kind == AttackKind.REIDENTIFICATION:
        score, reidentified, contribution, parts = reidentification_outcome(original, true_users, out)
        return AttackOutcome(algorithm.name, algorithm.kind, seed, resolved, out, float(score),
                             reidentified=reidentified, contribution=contribution, parts=parts)
    if algorithm.kind == AttackKind.TRACE_INFERENCE:
        score, error, contribution, parts = trace_inference_outcome(grid, original, out, lambda_t=lambda_t,
                                                                    hospital_weight=hospital_weight)
        return AttackOutcome(algorithm.name, algorithm.kind, seed, resolved, out, float(score),
                             error=error, contribution=contribution, parts=parts)
    raise ValueError(f"{algorithm.name} is a {algorithm.kind}, not an attack")


def judge_mode_params(names: list[str], sample_2019: bool) -> dict[str, dict]:
    """Per-attack parameters of a judge mode: ``{"sample_2019": True}`` for each of ``names`` that has
    the switch when the mode is the 2019 programs' sampling, nothing in exact mode."""
    if not sample_2019:
        return {}
    return {n: {"sample_2019": True} for n in names if "sample_2019" in {p.name for p in get(n).params}}


@dataclass(frozen=True)
class Preview:
    """What the judge's attacks would give one anonymized set.

    Attributes:
        s_u: utility of the set; ``valid`` is ``s_u >= s_req``.
        attacks: one :class:`AttackOutcome` per judge attack, in the order run.
        s_i_min / s_t_min: minimum over the re-identification / trace-inference
            attacks (None if no attack of that kind ran).
        pseudonymized: the private pseudonymization the attacks ran on.
    """

    s_u: float
    valid: bool
    attacks: list[AttackOutcome]
    pseudonymized: Pseudonymized

    def _min(self, kind: str) -> float | None:
        values = [a.score for a in self.attacks if a.kind == kind]
        return min(values) if values else None

    @property
    def s_i_min(self) -> float | None:
        return self._min(AttackKind.REIDENTIFICATION)

    @property
    def s_t_min(self) -> float | None:
        return self._min(AttackKind.TRACE_INFERENCE)

    def as_dict(self) -> dict:
        """JSON-ready summary (no per-user data)."""
        return {"s_u": self.s_u, "valid": self.valid, "s_i_min": self.s_i_min, "s_t_min": self.s_t_min,
                "attacks": [{"name": a.name, "kind": a.kind, "score": a.score, "seed": a.seed}
                            for a in self.attacks]}


def preview(grid: Grid, reference: Traces, original: Traces, anonymized: AnonymizedTraces, *, seed: int,
            attacks: list[str] | None = None, axis: TimeAxis | None = None,
            convention: str = scores.MEAN_DISTANCE, lambda_u: float = 2.0, s_req: float = 0.7,
            lambda_t: float = 2.0, hospital_weight: float = 10.0,
            pseudonymized: Pseudonymized | None = None, seeds: dict[str, int] | None = None,
            params: dict[str, dict] | None = None) -> Preview:
    """Score ``anonymized`` for utility and attack it as the judge would.

    Args:
        reference: the team's reference traces R, (m, S*Lr).
        original: the team's original traces O, (m, S*Lo).
        anonymized: the anonymized set, events (m, S*Lo), same users and time ids as O.
        seed: base seed; the pseudonymization uses it, and attack ``name`` runs with
            ``derived_seed(seed, name)``.
        attacks: attack names (default: the judge's defaults, I1-I3 and T1-T3).
        pseudonymized: an existing pseudonymization of ``anonymized`` to attack
            instead of drawing one (the judge's own, to compare).
        seeds: per-attack seed overrides (name -> seed), e.g. the seeds the
            judge derived for a public set, to reproduce its run exactly.
        params: per-attack parameter overrides (name -> {param: value}), e.g. the
            contest's judge mode (``sample_2019``).
    Every attack runs even on an invalid set (it is a preview); ``valid`` says
    whether the judge would attack it at all.
    """
    s_u = scores.utility(grid, original, anonymized, convention=convention, lambda_u=lambda_u)
    pseud = pseudonymized or pseudonymize(anonymized, seed=seed)
    names = attacks if attacks is not None else [a.name for a in judge_defaults()]
    seeds = seeds or {}
    outcomes = [run_attack(name, grid, reference, pseud.pubtraces, seed=seeds.get(name, derived_seed(seed, name)),
                           original=original, true_users=pseud.user_ids, axis=axis, lambda_t=lambda_t,
                           hospital_weight=hospital_weight, params=(params or {}).get(name))
                for name in names]
    return Preview(float(s_u), scores.is_valid(s_u, s_req), outcomes, pseud)


#: Level of the preview's prediction interval for the judge's figure (stated on the card).
PREDICTION_LEVEL = 0.95


def prediction_interval(values, level: float = PREDICTION_LEVEL) -> dict | None:
    """Prediction interval for one more draw of a figure seen ``values`` times (the judge's s_I,min or
    s_T,min, given the preview's pseudonymizations).

    The judge's pseudonymization is one more draw like the preview's, with the same attack seeds; over
    pseudonymizations the minima spread roughly normally (each score averages many users), so the classic
    interval for a new observation, mean +- t(1 - (1 - level) / 2, n - 1) * sd * sqrt(1 + 1/n), covers
    it with probability ``level`` (sd with n - 1 degrees of freedom). Clipped to [0, 1], where scores live.

    Args:
        values: the n draws (None ignored; a kind no attack scored).
    Returns:
        {"low", "high", "mean", "sd", "n", "level"}, or None with fewer than 2 draws. sd = 0 (every draw
        equal: the pseudonym order did not move the minimum) gives a point, which carries no level.
    """
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    n = len(x)
    if n < 2:
        return None
    # equal minima summed in another order differ by ~1e-16: that is no spread
    mean, sd = float(x.mean()), (float(x.std(ddof=1)) if np.ptp(x) > 1e-12 else 0.0)
    # Student's t quantile at n - 1 degrees of freedom (scipy.stats.t.ppf is this function; scipy.stats
    # itself costs the command line and every worker half a second to import)
    half = float(stdtrit(n - 1, 0.5 + level / 2)) * sd * np.sqrt(1.0 + 1.0 / n)
    return {"low": max(0.0, mean - half), "high": min(1.0, mean + half), "mean": mean, "sd": sd, "n": n,
            "level": level}


PER_USER_HEADER = ("user_id", "reidentified_by", "n_reidentified", "trace_error_min", "closest_trace_attack",
                   "s_i_contribution", "s_t_contribution")


def per_user_rows(original: Traces, outcomes: list[AttackOutcome]) -> tuple[tuple, list[tuple]]:
    """Per-user risk table of one set: (header, rows), one row per user in ascending user id.

    Columns: the user; the re-identification attacks that named it (``;``
    separated); how many did; the smallest trace error any trace-inference
    attack left on it and which attack that was; and the user's share of the
    minimum s_I and minimum s_T (the attack achieving each minimum), so that
    each share column sums to that minimum.
    """
    reid = [a for a in outcomes if a.kind == AttackKind.REIDENTIFICATION]
    trace = [a for a in outcomes if a.kind == AttackKind.TRACE_INFERENCE]
    m = original.m
    hit = np.stack([a.reidentified for a in reid]) if reid else np.zeros((0, m), bool)
    names = np.array([a.name for a in reid], dtype=object)
    by = [";".join(names[hit[:, i]]) for i in range(m)] if reid else [""] * m
    n_hit = hit.sum(axis=0)
    if trace:
        err = np.stack([a.error for a in trace])
        worst = err.argmin(axis=0)
        err_min = err.min(axis=0)
        t_best = min(trace, key=lambda a: a.score)
        t_share = t_best.contribution
        worst_name = [trace[k].name for k in worst]
    else:
        err_min = t_share = np.full(m, np.nan)
        worst_name = [""] * m
    i_share = min(reid, key=lambda a: a.score).contribution if reid else np.full(m, np.nan)
    rows = [(int(original.user_ids[i]), by[i], int(n_hit[i]), float(err_min[i]), worst_name[i],
             float(i_share[i]), float(t_share[i])) for i in range(m)]
    return PER_USER_HEADER, rows


def per_user_csv(header: tuple, rows: list[tuple]) -> bytes:
    """The per-user risk table of :func:`per_user_rows` as CSV bytes, header first."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode()


def leak_map(grid: Grid, original: Traces, anonymized: AnonymizedTraces, outcomes: list[AttackOutcome], *,
             slots_per_day: int = 20, home: str | None = None, axis: TimeAxis | None = None) -> dict:
    """Where re-identified users' traces leak, per region.

    A user counts as re-identified if any re-identification attack named it.
    For those users:

    - ``home``: (M,) number of re-identified users whose home region (their
      most frequent original region in the home slots, 8:00-8:59 by default,
      the slots I3/T3 use) is each region;
    - ``exposed``: (M,) number of their original events at each region that
      the anonymized set leaves exact (published as that single region);
    - ``frequent``: (M,) number of re-identified users for whom the region is
      their most frequent original region overall.

    Returns a dict of those three (M,) int64 arrays plus ``users`` (the count of
    re-identified users).
    """
    M = grid.M
    reid = [a.reidentified for a in outcomes if a.kind == AttackKind.REIDENTIFICATION]
    hit = np.any(np.stack(reid), axis=0) if reid else np.zeros(original.m, bool)
    regions = original.regions[hit].astype(np.int64)
    events = anonymized.events[hit]
    if axis is not None:
        slots_per_day = axis.slots_per_day
        home = home or home_slots(axis)
    home = home or "0,1"
    mask = slot_mask(original.time_ids, slots_per_day, parse_slots(home))
    exposed = np.bincount(regions[events == regions], minlength=M)
    return {"users": int(hit.sum()), "home": _modal_counts(regions[:, mask], M),
            "frequent": _modal_counts(regions, M), "exposed": exposed.astype(np.int64)}


def _modal_counts(regions: np.ndarray, M: int) -> np.ndarray:
    """(M,) how many rows of ``regions`` (n, k) have each region as their most frequent (lowest id on ties)."""
    if regions.size == 0:
        return np.zeros(M, dtype=np.int64)
    n = regions.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), regions.shape[1])
    counts = np.bincount(rows * M + regions.ravel(), minlength=n * M).reshape(n, M)
    return np.bincount(counts.argmax(axis=1), minlength=M).astype(np.int64)
