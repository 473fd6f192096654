"""Results and awards from stored score rows (rules §§7 and 9).

One pure, deterministic function, :func:`compute_results`, turns the score
rows a contest has stored -- one :class:`UtilityRow` per final anonymized set,
one :class:`AttackRow` per scored attack attempt (judge or team) -- into the
minimum privacy scores of every set, per-round and weighted totals per team,
the attack matrix and the awards. A late attack or a re-score simply calls it
again with the new rows: nothing is cached between calls. No Django here.

The rules themselves (minimum over attempts, invalid -> 0, unattacked -> 1,
attacker sums, round weights) live in one function, :func:`rule_values`, on
arrays with a replicate axis: the published results are its one-column case,
and ``scoring.uncertainty`` runs it on the stored scores, per-attack bounds and
bootstrap replicates at once, so the intervals can never follow other rules
than the ranking (:func:`rankings_at` re-ranks any column).

Vocabulary
----------
- A *set* is one anonymized set ``A(t, j)`` of team ``t`` in challenge ``j``
  (1 = IDP, re-identification; 2 = TRP, trace inference) of one round,
  named by a :class:`SetRef`. The benchmark set is a set of the team id passed
  as ``benchmark_team`` (team tau+1 in the paper).
- An *attacker* is a participating team id (``int``) or the name of a judge
  sample attack (``str``, e.g. ``"I2-VisitProb"``).
- ``kind`` of an attack is ``"reidentification"`` (score s_I, from an etable)
  or ``"trace_inference"`` (score s_T, from etraces).

Rules, as rules §7 and 9 state them
---------------------------------
- ``s_I,min(A)`` / ``s_T,min(A)`` of a valid set: the minimum over every
  attack of that kind on it, judge and team attacks alike, all attempts.
  An invalid set scores 0 for both.
- Per round, team ``t``: ``s_I,min(t,1)`` (its IDP set), ``s_T,min(t,2)`` (its
  TRP set), an unsubmitted or invalid set scoring 0; overall
  ``s_I,min(t,1) + s_T,min(t,2)``.
- Attacker sum of team ``a`` for a kind, per round: over every set of the
  round (all teams, both challenges, and the benchmark): a valid set of
  another team that ``a`` attacked counts ``a``'s best (lowest) attempt; a
  valid set it did not attack counts 1 (the benchmark too); its own sets,
  invalid and unsubmitted sets count 0. Lowest wins.
- Every quantity is computed per round and combined with the round weights;
  rankings use the combined value.
- Variant ``"2019-v1.4"`` (default): overall places 1-3 (highest overall),
  best anonymizer re-identification (highest ``s_I,min(t,1)``), best
  anonymizer trace inference (highest ``s_T,min(t,2)``), best attacker
  re-identification and trace inference (lowest attacker sum), each attacker
  award excluding the overall winner (place 1) and the best anonymizer of the
  same kind.
- Variant ``"paper"`` (the paper's section 3.4): best anonymization (highest
  ``s_T,min(t,2)``), best re-identification and best trace-inference attacker
  (lowest attacker sum, same counting), no exclusions and no overall places.

Decisions where the rules are silent
-------------------------------------------------------
- A valid set that nobody attacked in a kind has minimum 1.0 (no attack
  lowered it). The judge attacks always run, so this only happens before
  they do; the set's ``n_attacks_*`` is then 0 so the page can flag it.
- The benchmark enters like any other target: each benchmark set of a round
  (one, or one per challenge if the generator makes both) is a target that
  counts 1 if the attacker did not attack it. With the 2019 layout of one
  benchmark set per round this is exactly rules §9.4's ``s_I(bench)`` term.
  Benchmark sets appear in the input as utility rows of ``benchmark_team``;
  the benchmark never attacks and wins no award.
- Rows that the platform should never produce are not counted but listed in
  :attr:`Results.ignored` with the reason: a team's attack on its own set,
  and attacks on an invalid set (e.g. left over after a re-score made the
  set invalid). Rows that cannot be interpreted at all (unknown team or
  round, attack on a set with no utility row, score outside [0, 1], naive
  datetimes, duplicate utility rows) raise :class:`ValueError` naming the row.
- Eligibility, so that an award never goes to a team that did nothing:
  overall needs at least one valid set (IDP or TRP, any round); a best
  anonymizer award needs a valid set of its challenge; a best attacker award
  needs at least one counted attack of its kind. An award with no eligible
  team is vacant (absent from :attr:`Results.awards`).
- Ties: values are compared after rounding to 12 decimals (sums of k/m
  scores carry float noise far below that and far below any real
  difference; the UI shows 4 decimals). Tie-break ``"earlier-final-submission"``
  (default): the team whose *final submission* was earlier wins, where the
  final submission is the latest ``submitted_at`` among the rows the award
  is computed from -- for an anonymizer award the team's final sets of the
  award's challenge(s) in all rounds, for an attacker award its counted
  attack attempts of that kind. A team with no recorded time ranks after
  every team with one. Tie-break ``"team-id"``: lower team id wins. If the
  declared tie-break cannot separate two teams, the lower team id wins and
  the award records ``decided_by="team-id"``.
- Each :class:`Award` records how it was decided against the next candidate
  (``"score"``, the tie-break name, ``"team-id"`` or ``"sole-candidate"``)
  and the teams it was tied with, so the results page can show it.
- Timestamps must be timezone-aware (a naive time has no defined order
  across machines).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from types import SimpleNamespace as Row

import numpy as np

from .vocabulary import ATTACK_KINDS as KINDS
from .vocabulary import CHALLENGES, IDP, REIDENTIFICATION, TRACE_INFERENCE, TRP  # noqa: F401 - re-exported

VARIANT_2019 = "2019-v1.4"
VARIANT_PAPER = "paper"
VARIANTS = (VARIANT_2019, VARIANT_PAPER)

TIE_EARLIER_FINAL_SUBMISSION = "earlier-final-submission"
TIE_TEAM_ID = "team-id"
TIE_BREAKS = (TIE_EARLIER_FINAL_SUBMISSION, TIE_TEAM_ID)

DECIDED_BY_SCORE = "score"
DECIDED_BY_SOLE = "sole-candidate"

# Award names (keys of Results.awards / standings).
OVERALL = "overall"
BEST_ANONYMIZER_REID = "best_anonymizer_reidentification"
BEST_ANONYMIZER_TRACE = "best_anonymizer_trace_inference"
BEST_ANONYMIZER = "best_anonymizer"  # paper variant: highest s_T,min(t,2)
BEST_ATTACKER_REID = "best_attacker_reidentification"
BEST_ATTACKER_TRACE = "best_attacker_trace_inference"

#: Decimals kept when comparing award values (see module docstring).
TIE_DECIMALS = 12


# --------------------------------------------------------------------------
# input rows
# --------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class SetRef:
    """One anonymized set: ``round`` number, ``team`` id, ``challenge`` 1 (IDP) or 2 (TRP)."""

    round: int
    team: int
    challenge: int

    def __post_init__(self):
        for name in ("round", "team", "challenge"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"SetRef.{name} must be an int, got {v!r}")
        if self.challenge not in CHALLENGES:
            raise ValueError(f"SetRef.challenge must be 1 (IDP) or 2 (TRP), got {self.challenge!r}")

    @property
    def key(self) -> str:
        """Stable text key, e.g. ``"r2-t3-c1"``."""
        return f"r{self.round}-t{self.team}-c{self.challenge}"


@dataclass(frozen=True)
class UtilityRow:
    """The utility score of a team's final anonymized set (one row per submitted set).

    ``valid`` is ``s_u >= s_req`` as judged at upload; ``submitted_at`` the
    time of that (final) upload, timezone-aware, or None if unknown.
    """

    set: SetRef
    s_u: float
    valid: bool
    submitted_at: datetime | None = None


@dataclass(frozen=True)
class AttackRow:
    """One scored attack attempt on a set.

    ``attacker``: a team id (int) or a judge sample attack name (str).
    ``kind``: ``"reidentification"`` (``score`` = s_I) or ``"trace_inference"``
    (``score`` = s_T). Several rows per (attacker, set, kind) are allowed;
    the best (lowest) counts.
    """

    set: SetRef
    attacker: int | str
    kind: str
    score: float
    submitted_at: datetime | None = None


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class SetResult:
    """Minimum privacy scores of one set (0 for an invalid set).

    ``s_i_min_by`` / ``s_t_min_by``: the attackers whose best attempt equals
    the minimum (sorted: team ids, then judge names).
    """

    set: SetRef
    s_u: float
    valid: bool
    benchmark: bool
    submitted_at: datetime | None
    s_i_min: float
    s_t_min: float
    n_attacks_i: int
    n_attacks_t: int
    s_i_min_by: tuple
    s_t_min_by: tuple


@dataclass(frozen=True)
class TeamQuantities:
    """A team's quantities of rules §9 (:data:`TEAM_FIELDS`): one round's in :class:`TeamRound`, their
    round-weighted totals in :class:`TeamTotal`.

    ``attack_sum_i`` / ``attack_sum_t``: the attacker sums (lower = stronger attacker).
    """

    team: int
    s_i_min: float
    s_t_min: float
    overall: float
    attack_sum_i: float
    attack_sum_t: float


@dataclass(frozen=True)
class TeamRound(TeamQuantities):
    """One team's quantities in one round (rules §9), before weighting.

    ``n_targets``: number of valid sets of other teams and the benchmark in the
    round (the value of an attacker that attacked nothing).
    """

    round: int
    n_targets: int


@dataclass(frozen=True)
class TeamTotal(TeamQuantities):
    """Round-weighted totals of one team (``sum_r w_r * value_r``)."""


@dataclass(frozen=True)
class MatrixCell:
    """Attack matrix entry: ``attacker``'s best (lowest) ``kind`` score on ``set`` over ``attempts`` tries."""

    attacker: int | str
    set: SetRef
    kind: str
    best: float
    attempts: int


@dataclass(frozen=True)
class Standing:
    """One eligible team in an award's ranking (position 1 = best)."""

    position: int
    team: int
    value: float
    final_submission_at: datetime | None
    tied: bool = False  # another team in this ranking has the same value (to TIE_DECIMALS)


@dataclass(frozen=True)
class Award:
    """An award (or one overall place).

    ``decided_by``: how this team was ordered ahead of the next candidate --
    ``"score"``, the tie-break name, ``"team-id"``, or ``"sole-candidate"``.
    ``tied_with``: other eligible teams with the same (rounded) value.
    ``excluded``: the teams an exclusion rule removes from this award's
    ranking (whether or not they were otherwise eligible).
    """

    award: str
    place: int
    team: int
    value: float
    decided_by: str
    tied_with: tuple[int, ...] = ()
    excluded: tuple[int, ...] = ()


@dataclass(frozen=True)
class Results:
    """Everything the results pages show; plain data, see :meth:`to_dict`."""

    variant: str
    tie_break: str
    round_weights: tuple[tuple[int, float], ...]
    teams: tuple[int, ...]
    benchmark_team: int | None
    sets: tuple[SetResult, ...]
    team_rounds: tuple[TeamRound, ...]
    team_totals: tuple[TeamTotal, ...]
    matrix: tuple[MatrixCell, ...]
    awards: tuple[Award, ...]
    standings: tuple[tuple[str, tuple[Standing, ...]], ...]
    ignored: tuple[str, ...] = field(default=())
    leaderboards: tuple[tuple[str, tuple[Standing, ...]], ...] = field(default=())

    # ----- look-ups ------------------------------------------------------
    def set_result(self, ref: SetRef) -> SetResult:
        for s in self.sets:
            if s.set == ref:
                return s
        raise KeyError(ref.key)

    def team_round(self, round: int, team: int) -> TeamRound:  # noqa: A002 - contest word
        for tr in self.team_rounds:
            if tr.round == round and tr.team == team:
                return tr
        raise KeyError((round, team))

    def team_total(self, team: int) -> TeamTotal:
        for tt in self.team_totals:
            if tt.team == team:
                return tt
        raise KeyError(team)

    def award(self, name: str, place: int = 1) -> Award | None:
        """The award ``name`` (``place`` for overall), or None if vacant."""
        for a in self.awards:
            if a.award == name and a.place == place:
                return a
        return None

    def standing(self, name: str) -> tuple[Standing, ...]:
        return dict(self.standings)[name]

    def cell(self, attacker, ref: SetRef, kind: str) -> MatrixCell | None:
        for c in self.matrix:
            if c.attacker == attacker and c.set == ref and c.kind == kind:
                return c
        return None

    def to_dict(self) -> dict:
        """JSON-serialisable form (datetimes as ISO 8601, SetRefs as objects with a ``key``)."""
        return _jsonable(self)


def _jsonable(obj):
    if isinstance(obj, SetRef):
        return {"round": obj.round, "team": obj.team, "challenge": obj.challenge, "key": obj.key}
    if is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in fields(obj):
            v = getattr(obj, f.name)
            if f.name in ("standings", "leaderboards"):
                out[f.name] = {name: [_jsonable(s) for s in rows] for name, rows in v}
            elif f.name == "round_weights":
                out[f.name] = [{"round": r, "weight": w} for r, w in v]
            else:
                out[f.name] = _jsonable(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# --------------------------------------------------------------------------
# the computation
# --------------------------------------------------------------------------
def _attacker_key(attacker):
    """Teams first (by id), then judge attacks (by name): a total, stable order."""
    return (0, attacker, "") if isinstance(attacker, int) else (1, 0, attacker)


def _check_time(t, what: str):
    if t is None:
        return
    if not isinstance(t, datetime):
        raise ValueError(f"{what}: submitted_at must be a datetime or None, got {t!r}")
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(f"{what}: submitted_at {t.isoformat()} has no time zone "
                         "(use timezone-aware datetimes)")


def _latest(times: Iterable[datetime | None]) -> datetime | None:
    ts = [t for t in times if t is not None]
    return max(ts) if ts else None


def _ranking(candidates, value: Mapping[int, float], higher_is_better: bool,
             times: Mapping[int, datetime | None], tie_break: str):
    """The one ranking rule of the platform (awards and leaderboards alike).

    Returns ``(order, key)``: the candidate team ids, best first, and the sort
    key, ``(rounded value, tie-break, team id)``, so callers can tell what
    separated two neighbours.
    """
    def key(t):
        v = round(value[t], TIE_DECIMALS)
        tb = ()
        if tie_break == TIE_EARLIER_FINAL_SUBMISSION:
            tb = (0, times[t].timestamp()) if times[t] is not None else (1, 0.0)
        return (-v if higher_is_better else v, tb, t)
    return sorted(candidates, key=key), key


def _standings(order, key, value, times) -> tuple[Standing, ...]:
    """Positions 1.. of ``order``; ``tied`` marks teams sharing their rounded value with another."""
    counts: dict = {}
    for t in order:
        counts[key(t)[0]] = counts.get(key(t)[0], 0) + 1
    return tuple(Standing(position=i + 1, team=t, value=value[t], final_submission_at=times[t],
                          tied=counts[key(t)[0]] > 1)
                 for i, t in enumerate(order))


#: The 2019 rule's round weights (rules §8.1, 9, 12): the preliminary round 0.1, the final round 0.9.
PRELIMINARY_WEIGHT, FINAL_WEIGHT = 0.1, 0.9


def default_round_weight(number: int, n_rounds: int | None = None) -> float:
    """The weight of round ``number`` (1-based) when the organizer names none.

    The 2019 rule: round 1 is the preliminary (0.1), every later round is final
    (0.9). A contest known to have a single round (``n_rounds == 1``) weighs it
    1.0, so its total is that round's value. Contests with more than two rounds
    should name their weights; the defaults still follow the rule round by round.
    """
    if n_rounds == 1:
        return 1.0
    return PRELIMINARY_WEIGHT if number == 1 else FINAL_WEIGHT


#: Name of the weighted-total leaderboard in :attr:`Results.leaderboards`.
LEADERBOARD_TOTAL = "total"


def leaderboard_name(round_no: int, challenge: int | None = None) -> str:
    """Key of a round's leaderboard (``challenge`` None: teams by overall; else that challenge's sets)."""
    return f"round-{round_no}" if challenge is None else f"round-{round_no}-challenge-{challenge}"


def _leaderboards(team_ids, rounds, sets, set_min, team_rounds, team_totals, tie_break):
    """What the leaderboard pages show, ranked by the awards' rule (:func:`_ranking`).

    - ``"total"``: every team by weighted overall, final submission = its latest final set.
    - ``"round-R"``: every team by that round's overall, final submission = its latest set of the round.
    - ``"round-R-challenge-C"``: each submitted team set of challenge C by its minimum of that
      challenge's kind (s_I,min for IDP, s_T,min for TRP), final submission = that set's upload.
    """
    boards = []

    def board(name, candidates, value, times):
        order, key = _ranking(candidates, value, True, times, tie_break)
        boards.append((name, _standings(order, key, value, times)))

    def latest_set(t, round_no=None):
        return _latest(row.submitted_at for ref, row in sets.items()
                       if ref.team == t and (round_no is None or ref.round == round_no))

    board(LEADERBOARD_TOTAL, team_ids, {tt.team: tt.overall for tt in team_totals},
          {t: latest_set(t) for t in team_ids})
    for r in rounds:
        board(leaderboard_name(r), team_ids, {tr.team: tr.overall for tr in team_rounds if tr.round == r},
              {t: latest_set(t, r) for t in team_ids})
        for c in CHALLENGES:
            mine = {ref.team: set_min[ref] for ref in sets if ref.round == r and ref.challenge == c
                    and ref.team in team_ids}
            board(leaderboard_name(r, c), sorted(mine),
                  {t: (s.s_i_min if c == IDP else s.s_t_min) for t, s in mine.items()},
                  {t: s.submitted_at for t, s in mine.items()})
    return tuple(boards)


def leaderboards_of(results: dict) -> dict:
    """The ``leaderboards`` of a stored :meth:`Results.to_dict` that has none (computed before they were
    kept), ranked by :func:`_leaderboards` from its own sets, team rounds and totals.

    ``results`` needs ``teams``, ``round_weights``, ``tie_break``, ``sets`` (set, s_i_min, s_t_min,
    submitted_at as ISO 8601), ``team_rounds`` and ``team_totals`` (team, round, overall); the answer is
    what ``to_dict()["leaderboards"]`` holds for the same results.
    """
    def when(iso):
        return datetime.fromisoformat(iso) if iso else None

    sets = {SetRef(s["set"]["round"], s["set"]["team"], s["set"]["challenge"]):
            Row(submitted_at=when(s["submitted_at"]), s_i_min=s["s_i_min"], s_t_min=s["s_t_min"])
            for s in results["sets"]}
    team_rounds = [Row(team=r["team"], round=r["round"], overall=r["overall"]) for r in results["team_rounds"]]
    team_totals = [Row(team=r["team"], overall=r["overall"]) for r in results["team_totals"]]
    boards = _leaderboards(tuple(results["teams"]), tuple(r["round"] for r in results["round_weights"]), sets, sets,
                           team_rounds, team_totals, results["tie_break"])
    return {name: [_jsonable(s) for s in rows] for name, rows in boards}


def compute_results(
    *,
    teams: Sequence[int],
    round_weights: Mapping[int, float],
    utility: Iterable[UtilityRow],
    attacks: Iterable[AttackRow],
    benchmark_team: int | None = None,
    variant: str = VARIANT_2019,
    tie_break: str = TIE_EARLIER_FINAL_SUBMISSION,
    places: int = 3,
) -> Results:
    """Minimum scores, per-round and weighted totals, attack matrix and awards.

    Args:
        teams: participating team ids (the benchmark is not one of them).
        round_weights: round number -> weight (default contest: {1: 0.1, 2: 0.9}).
        utility: one :class:`UtilityRow` per submitted final set, including
            the benchmark set(s) as rows of ``benchmark_team``.
        attacks: every scored attack attempt (:class:`AttackRow`), judge and team.
        benchmark_team: team id of the benchmark sets, or None.
        variant: ``"2019-v1.4"`` (default) or ``"paper"``.
        tie_break: ``"earlier-final-submission"`` (default) or ``"team-id"``.
        places: number of overall places awarded (2019: 3).

    Returns:
        :class:`Results`; identical for any order of the input rows.

    Raises:
        ValueError: naming the offending row, for rows that cannot be
        interpreted (see the module docstring).

    The stages, each a function of the previous ones' output: :func:`_check_parameters`,
    :func:`_check_sets`, :func:`_counted_attacks` (validated input), :func:`_attempt_counts`,
    :func:`rule_values` (the rules of rules §7 and 9, on one column: the stored scores; the uncertainty
    code runs the same function on many), :func:`_set_minima`, :func:`_team_rounds`,
    :func:`_weighted_totals`, :func:`_awards` (the variant's :data:`AWARD_RULES`) and
    :func:`_leaderboards`.
    """
    team_ids, weights = _check_parameters(teams, round_weights, benchmark_team, variant, tie_break, places)
    rounds = tuple(sorted(weights))
    sets = _check_sets(utility, weights, set(team_ids) | ({benchmark_team} if benchmark_team is not None else set()))
    counted, ignored = _counted_attacks(attacks, sets, team_ids)
    attempts, last_attack = _attempt_counts(counted)
    values = rule_values(teams=team_ids, round_weights=weights, valid={ref: row.valid for ref, row in sets.items()},
                         attempts=((row, float(row.score)) for row in counted), columns=1)
    best = {k: float(v[0]) for k, v in values.best.items()}
    matrix = tuple(
        MatrixCell(attacker=a, set=ref, kind=kind, best=v, attempts=attempts[(a, ref, kind)])
        for (a, ref, kind), v in sorted(best.items(), key=lambda kv: (kv[0][1], _attacker_key(kv[0][0]), kv[0][2])))
    set_results = _set_minima(sets, best, attempts, benchmark_team, values)
    set_min = {s.set: s for s in set_results}
    team_rounds = _team_rounds(rounds, team_ids, sets, values)
    team_totals = _weighted_totals(team_ids, values)
    awards, standings = _awards(AWARD_RULES[variant], team_ids, sets, team_totals, last_attack, tie_break, places)
    return Results(
        variant=variant, tie_break=tie_break,
        round_weights=tuple((r, weights[r]) for r in rounds),
        teams=team_ids, benchmark_team=benchmark_team,
        sets=tuple(set_results), team_rounds=tuple(team_rounds), team_totals=team_totals,
        matrix=matrix, awards=awards, standings=standings,
        ignored=tuple(sorted(ignored)),
        leaderboards=_leaderboards(team_ids, rounds, sets, set_min, team_rounds, team_totals, tie_break))


# ----- stage 1: validated input -----------------------------------------------------------
def _check_parameters(teams, round_weights, benchmark_team, variant, tie_break, places):
    """``(team ids sorted, {round: weight})`` after checking every parameter."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown award variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie-break {tie_break!r}; expected one of {', '.join(TIE_BREAKS)}")
    if isinstance(places, bool) or not isinstance(places, int) or places < 1:
        raise ValueError(f"places must be a positive int, got {places!r}")
    team_ids = tuple(sorted(teams))
    for t in team_ids:
        if isinstance(t, bool) or not isinstance(t, int):
            raise ValueError(f"team ids must be ints, got {t!r}")
    if len(set(team_ids)) != len(team_ids):
        raise ValueError(f"team ids are not unique: {list(teams)}")
    if benchmark_team is not None and benchmark_team in team_ids:
        raise ValueError(f"benchmark team {benchmark_team} is also listed as a participating team")
    weights = {}
    for r, w in round_weights.items():
        if isinstance(r, bool) or not isinstance(r, int):
            raise ValueError(f"round numbers must be ints, got {r!r}")
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"round {r}: weight {w!r} must be a finite number >= 0")
        weights[r] = w
    return team_ids, weights


def _check_sets(utility, weights, known_teams) -> dict[SetRef, UtilityRow]:
    """The final sets by reference, each utility row checked."""
    rounds = sorted(weights)
    sets: dict[SetRef, UtilityRow] = {}
    for row in utility:
        ref = row.set
        what = f"utility row for set {ref.key}"
        if ref.round not in weights:
            raise ValueError(f"{what}: round {ref.round} has no weight (rounds: {list(rounds)})")
        if ref.team not in known_teams:
            raise ValueError(f"{what}: team {ref.team} is neither a participating team nor the benchmark")
        if ref in sets:
            raise ValueError(f"{what}: more than one utility row for this set (give only the final one)")
        if not isinstance(row.valid, bool):
            raise ValueError(f"{what}: valid must be True or False, got {row.valid!r}")
        if not math.isfinite(float(row.s_u)):
            raise ValueError(f"{what}: s_u {row.s_u!r} is not a finite number")
        _check_time(row.submitted_at, what)
        sets[ref] = row
    return sets


def _counted_attacks(attacks, sets, team_ids) -> tuple[list[AttackRow], list[str]]:
    """The attack rows that count, and the reasons of the ones that do not (own set, invalid set)."""
    ignored: list[str] = []
    counted: list[AttackRow] = []
    for row in attacks:
        ref = row.set
        what = f"attack row by {row.attacker!r} on set {ref.key}"
        if row.kind not in KINDS:
            raise ValueError(f"{what}: kind {row.kind!r} is not one of {', '.join(KINDS)}")
        a = row.attacker
        if isinstance(a, bool) or not isinstance(a, (int, str)) or (isinstance(a, str) and not a):
            raise ValueError(f"{what}: attacker must be a team id (int) or a judge attack name (str)")
        if isinstance(a, int) and a not in team_ids:
            raise ValueError(f"{what}: attacker team {a} is not a participating team")
        score = float(row.score)
        if not (0.0 <= score <= 1.0):
            raise ValueError(f"{what}: score {row.score!r} is outside [0, 1]")
        _check_time(row.submitted_at, what)
        if ref not in sets:
            raise ValueError(f"{what}: no utility row for this set (it was never submitted)")
        reason = not_counted_reason(row, sets[ref].valid)
        if reason:
            ignored.append(reason)
            continue
        counted.append(row)
    return counted, ignored


def not_counted_reason(row: AttackRow, target_valid: bool) -> str | None:
    """Why the attack ``row`` on a set (valid or not) does not count, or None if it counts (rules §8.5, 9):
    a team's attack on its own set, and any attack on an invalid set."""
    a, ref = row.attacker, row.set
    if isinstance(a, int) and a == ref.team:
        return f"{row.kind} attack by team {a} on its own set {ref.key}: not counted"
    if not target_valid:
        return f"{row.kind} attack by {a!r} on invalid set {ref.key}: not counted"
    return None


# ----- stage 2: attempts and minimum scores ----------------------------------------------------------------
def _attempt_counts(counted):
    """Per (attacker, set, kind): the number of counted attempts; per (team, kind): the time of its
    latest counted attack (the best attempt is :func:`rule_values`' business)."""
    attempts: dict[tuple, int] = {}
    last_attack: dict[tuple, datetime | None] = {}
    for row in counted:
        k = (row.attacker, row.set, row.kind)
        attempts[k] = attempts.get(k, 0) + 1
        if isinstance(row.attacker, int):
            tk = (row.attacker, row.kind)
            last_attack[tk] = _latest([last_attack.get(tk), row.submitted_at])
    return attempts, last_attack


def _set_minima(sets, best, attempts, benchmark_team, values: RuleValues) -> list[SetResult]:
    """The sets with their s_I,min and s_T,min (the one-replicate ``values``) and who reached them."""
    by_set: dict[tuple, list] = {}
    for (a, ref, kind), v in best.items():
        by_set.setdefault((ref, kind), []).append((a, v))

    def minimum(ref: SetRef, kind: str):
        low = float(values.set_min[(ref, kind)][0])
        entries = by_set.get((ref, kind), []) if sets[ref].valid else []
        who = tuple(sorted((a for a, v in entries if v == low), key=_attacker_key))
        n = sum(attempts[(a, ref, kind)] for a, _ in entries)
        return low, n, who

    out = []
    for ref in sorted(sets):
        row = sets[ref]
        si, ni, wi = minimum(ref, REIDENTIFICATION)
        st, nt, wt = minimum(ref, TRACE_INFERENCE)
        out.append(SetResult(
            set=ref, s_u=float(row.s_u), valid=row.valid, benchmark=ref.team == benchmark_team,
            submitted_at=row.submitted_at, s_i_min=si, s_t_min=st, n_attacks_i=ni, n_attacks_t=nt,
            s_i_min_by=wi, s_t_min_by=wt))
    return out


# ----- stage 3: the rules of rules §9 on arrays with a replicate axis ------------------------------
#: The per-round (and weighted) quantities of a team, in :class:`TeamQuantities` order.
TEAM_FIELDS = tuple(f.name for f in fields(TeamQuantities) if f.name != "team")


@dataclass(frozen=True)
class RuleValues:
    """Every quantity rules §9 ranks, each a (C,) float64 array over C columns ("replicates").

    The published results are the one-column case (the stored scores); ``scoring.uncertainty``
    passes the stored scores in column 0, bounds and bootstrap replicates in the others, and so
    gets every rule -- set minima, invalid -> 0, unattacked -> 1, attacker sums, round weights --
    from this one place.

    Attributes:
        columns: C.
        best: (attacker, SetRef, kind) -> (C,) the attacker's best (lowest) counted attempt.
        set_min: (SetRef, kind) -> (C,) minimum over the counted attempts of that kind on the set.
        team_rounds: (round, team) -> {field of :data:`TEAM_FIELDS`: (C,)}.
        team_totals: team -> {field: (C,)}, ``sum_r w_r * value_r``.
    """

    columns: int
    best: dict
    set_min: dict
    team_rounds: dict
    team_totals: dict

    def board(self, name: str, team: int) -> np.ndarray:
        """(C,) the value that ranks ``team`` on leaderboard ``name`` (:func:`leaderboard_name`)."""
        if name == LEADERBOARD_TOTAL:
            return self.team_totals[team]["overall"]
        for (r, t), fields_ in self.team_rounds.items():
            if t != team:
                continue
            if name == leaderboard_name(r):
                return fields_["overall"]
            for c, kind in ((IDP, REIDENTIFICATION), (TRP, TRACE_INFERENCE)):
                if name == leaderboard_name(r, c):
                    return self.set_min[(SetRef(r, team, c), kind)]
        raise KeyError((name, team))


def rule_values(*, teams: Sequence[int], round_weights: Mapping[int, float], valid: Mapping[SetRef, bool],
                attempts: Iterable[tuple[AttackRow, np.ndarray]], columns: int) -> RuleValues:
    """The rules of rules §7 and 9 on (C,) columns of attack scores.

    Args:
        teams: participating team ids.
        round_weights: round -> weight.
        valid: every submitted set (the benchmark's too) -> its validity.
        attempts: (attack row, (C,) its score in each column); rows that do not count
            (:func:`not_counted_reason`) are skipped.
        columns: C.
    Returns:
        :class:`RuleValues`. Per column: a valid set's minimum is the lowest attempt of the kind
        (1 if none), an invalid set's 0; per round a team's s_I,min(t,1), s_T,min(t,2) (an
        unsubmitted set 0), their sum, and its attacker sums (each valid set of another team or
        the benchmark counts the team's best attempt on it, or 1 if it made none); then the
        round-weighted totals. Only (C,) vectors are combined: no loop runs per column.
    """
    ones, zeros = np.ones(columns), np.zeros(columns)
    best: dict[tuple, np.ndarray] = {}
    for row, score in attempts:
        ref = row.set
        if ref not in valid or not_counted_reason(row, valid[ref]):
            continue
        score = np.asarray(score, dtype=np.float64).reshape(columns)
        k = (row.attacker, ref, row.kind)
        best[k] = np.minimum(best[k], score) if k in best else score
    set_min: dict = {}
    for (_attacker, ref, kind), v in best.items():
        set_min[(ref, kind)] = np.minimum(set_min[(ref, kind)], v) if (ref, kind) in set_min else v
    for ref, ok in valid.items():
        for kind in KINDS:
            # invalid: 0 (rules §7); valid and never attacked in this kind: 1 (nothing lowered it)
            set_min[(ref, kind)] = set_min.get((ref, kind), ones) if ok else zeros
    team_rounds: dict = {}
    rounds = sorted(round_weights)
    for r in rounds:
        round_sets = sorted(ref for ref in valid if ref.round == r)
        for t in teams:
            idp, trp = SetRef(r, t, IDP), SetRef(r, t, TRP)
            s_i = set_min[(idp, REIDENTIFICATION)] if idp in valid else zeros
            s_t = set_min[(trp, TRACE_INFERENCE)] if trp in valid else zeros
            # attacked -> best attempt, valid but not attacked -> 1; own, invalid and unsubmitted
            # sets are not targets (count 0)
            targets = [ref for ref in round_sets if ref.team != t and valid[ref]]
            sums = {kind: np.sum([best.get((t, ref, kind), ones) for ref in targets] or [zeros], axis=0)
                    for kind in KINDS}
            team_rounds[(r, t)] = {"s_i_min": s_i, "s_t_min": s_t, "overall": s_i + s_t,
                                   "attack_sum_i": sums[REIDENTIFICATION], "attack_sum_t": sums[TRACE_INFERENCE]}
    team_totals = {t: {f: np.sum([float(round_weights[r]) * team_rounds[(r, t)][f] for r in rounds] or [zeros],
                                 axis=0) for f in TEAM_FIELDS} for t in teams}
    return RuleValues(columns=columns, best=best, set_min=set_min, team_rounds=team_rounds, team_totals=team_totals)


def _team_rounds(rounds, team_ids, sets, values: RuleValues) -> list[TeamRound]:
    """Each team's s_I,min(t,1), s_T,min(t,2), overall and attacker sums in each round (rules §9)."""
    out = []
    for r in rounds:
        for t in team_ids:
            v = {f: float(values.team_rounds[(r, t)][f][0]) for f in TEAM_FIELDS}
            n_targets = sum(1 for ref, row in sets.items() if ref.round == r and ref.team != t and row.valid)
            out.append(TeamRound(round=r, team=t, n_targets=n_targets, **v))
    return out


def _weighted_totals(team_ids, values: RuleValues) -> tuple[TeamTotal, ...]:
    """``sum_r w_r * value_r`` of every per-round quantity of every team."""
    return tuple(TeamTotal(team=t, **{f: float(values.team_totals[t][f][0]) for f in TEAM_FIELDS})
                 for t in team_ids)


def rankings_at(results: Results, values: RuleValues, column: int = 0) -> dict[str, tuple[int, ...]]:
    """Every ranking of ``results`` (award standings and leaderboards, by name: the team order)
    re-ranked by :func:`_ranking` on column ``column`` of ``values``, with the published
    candidates, exclusions and final-submission times. On the column of the stored scores it
    gives the published order; ``scoring.uncertainty`` relies on that."""
    out: dict[str, tuple[int, ...]] = {}
    rules = {rule.name: rule for rule in AWARD_RULES[results.variant]}
    for name, rows in results.standings:
        rule = rules[name]
        value = {st.team: float(values.team_totals[st.team][rule.value][column]) for st in rows}
        times = {st.team: st.final_submission_at for st in rows}
        out[name] = tuple(_ranking(list(value), value, rule.higher_is_better, times, results.tie_break)[0])
    for name, rows in results.leaderboards:
        value = {st.team: float(values.board(name, st.team)[column]) for st in rows}
        times = {st.team: st.final_submission_at for st in rows}
        out[f"leaderboard:{name}"] = tuple(_ranking(list(value), value, True, times, results.tie_break)[0])
    return out


# ----- stage 4: awards, each variant's rules as data ---------------------------------------------
@dataclass(frozen=True)
class AwardRule:
    """One award of a variant.

    ``value``: the :class:`TeamTotal` field ranked; ``higher_is_better``. Anonymizer awards name
    their ``challenges`` (eligible: a valid set of one of them; final submission: the latest final
    set of them); attacker awards their ``attack_kind`` (eligible: a counted attack of that kind;
    final submission: the latest such attack). ``places``: None for the overall award's
    ``places`` argument. ``exclude``: earlier awards whose (place-1) winner may not win this one.
    """

    name: str
    value: str
    higher_is_better: bool
    challenges: tuple[int, ...] = ()
    attack_kind: str | None = None
    places: int | None = 1
    exclude: tuple[str, ...] = ()


AWARD_RULES: dict[str, tuple[AwardRule, ...]] = {
    VARIANT_2019: (
        AwardRule(OVERALL, "overall", True, challenges=CHALLENGES, places=None),
        AwardRule(BEST_ANONYMIZER_REID, "s_i_min", True, challenges=(IDP,)),
        AwardRule(BEST_ANONYMIZER_TRACE, "s_t_min", True, challenges=(TRP,)),
        AwardRule(BEST_ATTACKER_REID, "attack_sum_i", False, attack_kind=REIDENTIFICATION,
                  exclude=(OVERALL, BEST_ANONYMIZER_REID)),
        AwardRule(BEST_ATTACKER_TRACE, "attack_sum_t", False, attack_kind=TRACE_INFERENCE,
                  exclude=(OVERALL, BEST_ANONYMIZER_TRACE)),
    ),
    VARIANT_PAPER: (
        AwardRule(BEST_ANONYMIZER, "s_t_min", True, challenges=(TRP,)),
        AwardRule(BEST_ATTACKER_REID, "attack_sum_i", False, attack_kind=REIDENTIFICATION),
        AwardRule(BEST_ATTACKER_TRACE, "attack_sum_t", False, attack_kind=TRACE_INFERENCE),
    ),
}


def _awards(rules, team_ids, sets, team_totals, last_attack, tie_break, places):
    """``(awards, standings)`` of ``rules`` in order, each ranked by :func:`_ranking`."""
    total = {tt.team: tt for tt in team_totals}
    awards: list[Award] = []
    standings: list[tuple[str, tuple[Standing, ...]]] = []
    winner: dict[str, int] = {}
    for rule in rules:
        if rule.attack_kind is not None:
            candidates = [t for t in team_ids if (t, rule.attack_kind) in last_attack]
            times = {t: last_attack.get((t, rule.attack_kind)) for t in team_ids}
        else:
            candidates = [t for t in team_ids if any(row.valid for ref, row in sets.items()
                                                     if ref.team == t and ref.challenge in rule.challenges)]
            times = {t: _latest(row.submitted_at for ref, row in sets.items()
                                if ref.team == t and ref.challenge in rule.challenges) for t in team_ids}
        value = {t: getattr(total[t], rule.value) for t in team_ids}
        excluded = tuple(sorted({winner[name] for name in rule.exclude if name in winner}))
        pool = [t for t in candidates if t not in excluded]
        order, key = _ranking(pool, value, rule.higher_is_better, times, tie_break)
        standings.append((rule.name, _standings(order, key, value, times)))
        n_places = places if rule.places is None else rule.places
        for place in range(1, min(n_places, len(order)) + 1):
            t = order[place - 1]
            rest = order[place:]
            tied = tuple(u for u in pool if u != t and key(u)[0] == key(t)[0])
            if not rest:
                decided = DECIDED_BY_SOLE if len(order) == 1 else DECIDED_BY_SCORE
            elif key(rest[0])[0] != key(t)[0]:
                decided = DECIDED_BY_SCORE
            elif key(rest[0])[1] != key(t)[1]:
                decided = tie_break
            else:
                decided = TIE_TEAM_ID
            awards.append(Award(award=rule.name, place=place, team=t, value=value[t], decided_by=decided,
                                tied_with=tied, excluded=excluded))
            if place == 1:
                winner[rule.name] = t
    return tuple(awards), tuple(standings)
