"""The results snapshot's one schema: frozen dataclasses, one builder, one reader.

A :class:`~contest.models.ResultsSnapshot` stores one computation of the results as JSON
(``ResultsSnapshot.data``); the results pages, their CSVs, the API and the contest archive read it.
This module is the only place that knows the JSON's shape:

- :func:`build` turns what the results job computed (``scoring.results.Results`` and the figures the
  other services return as JSON-able dicts) into a :class:`SnapshotData`, checking every part;
- :func:`to_json` writes a :class:`SnapshotData` as the stored JSON, ``version`` included;
- :func:`read` reads stored JSON back into a :class:`SnapshotData`; JSON of an unknown version, or
  with a key the schema does not know or without one it needs, is refused with
  :class:`SnapshotSchemaError` naming the key.

``to_json(read(data)) == data`` for every snapshot the builder wrote (``tests/contest/test_results_snapshot.py``),
so a snapshot's ``sha256`` (of its JSON, keys sorted) is the digest of what the pages read.

Versions. :data:`VERSION` 2 is the shape the builder writes. Snapshots stored before ``version`` existed
were brought to version 2 by the data migration ``0016_snapshot_schema_version``
(``contest.services.results.upgraded_snapshot_data``), which added their leaderboards, standing and
correlation only: so a version-2 snapshot may lack the parts that came later or never were in it --
``contest``, ``team_names``, ``round_names``, ``analyses``, ``sample_anonymizers`` and ``uncertainty``
(and an uncertainty place its ``swap_next``, an award standing's place its ``tied``). The reader gives
those as None (the pages show them as not computed) and the writer leaves a None part out, so such a
snapshot reads and writes back unchanged (but for ``swap_next``, written as null like a last place's). A
snapshot without ``version`` has not been migrated: the reader refuses it (``manage.py migrate`` upgrades
it).

Values keep their JSON types (a stored 1 stays the int 1; times stay ISO 8601 text, as the CSVs
print them): the schema names and nests them, it does not convert them. Round and team numbers that
JSON keeps as object keys (``"2"``) are ints here. Scores are in [0, 1] unless said otherwise.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from contest.services.errors import ServiceError
from scoring.results import SetRef

#: The shape of the JSON this module writes and reads (its ``"version"`` key).
VERSION = 2


class SnapshotSchemaError(ServiceError, ValueError):
    """Stored results JSON that is not a snapshot of :data:`VERSION`; the message names the key."""

    code = "snapshot_schema"
    status = 500


# ---------------------------------------------------------------- reading and writing, generically
def _same(value):
    return value


def _tuple(item: Callable) -> Callable:
    """A converter of a JSON list into a tuple of ``item(element)``."""
    return lambda values: tuple(item(v) for v in _list(values))


def _list(values) -> list:
    if not isinstance(values, list | tuple):
        raise SnapshotSchemaError(f"expected a list, got {type(values).__name__} {values!r:.80}")
    return list(values)


def _by_number(item: Callable) -> Callable:
    """A converter of a JSON object keyed by numbers as text (``{"2": ...}``) into ``{2: item(...)}``."""
    def convert(obj):
        try:
            return {int(k): item(v) for k, v in _object(obj, "numbered object").items()}
        except ValueError as exc:
            raise SnapshotSchemaError(f"a key of {obj!r:.80} is not a number") from exc
    return convert


def _by_name(item: Callable) -> Callable:
    return lambda obj: {str(k): item(v) for k, v in _object(obj, "named object").items()}


def _pair(values) -> tuple:
    """An interval ``[lo, hi]``."""
    pair = tuple(_list(values))
    if len(pair) != 2:
        raise SnapshotSchemaError(f"an interval has two ends, got {values!r:.80}")
    return pair


def _object(obj, what: str) -> dict:
    if not isinstance(obj, dict):
        raise SnapshotSchemaError(f"{what}: expected an object, got {type(obj).__name__} {obj!r:.80}")
    return obj


def _set_ref(obj) -> SetRef:
    """A set's reference ``{"round", "team", "challenge", "key"}`` (the key must be the reference's own)."""
    obj = _object(obj, "set")
    _check_keys("set", obj, ("round", "team", "challenge", "key"))
    try:
        ref = SetRef(obj["round"], obj["team"], obj["challenge"])
    except ValueError as exc:
        raise SnapshotSchemaError(f"set: {exc}") from exc
    if ref.key != obj["key"]:
        raise SnapshotSchemaError(f"set: key {obj['key']!r} is not {ref.key!r}")
    return ref


def _check_keys(what: str, obj: dict, required, optional=()) -> None:
    unknown = sorted(set(obj) - set(required) - set(optional))
    missing = sorted(set(required) - set(obj))
    if unknown:
        raise SnapshotSchemaError(f"{what}: unknown key {unknown[0]!r} (the results snapshot's schema, "
                                  f"contest/services/results_snapshot.py, does not know it)")
    if missing:
        raise SnapshotSchemaError(f"{what}: the key {missing[0]!r} is missing")


def as_json(value):
    """The JSON form of a schema value (a record, a tuple or dict of them, a plain value): records by their
    fields, tuples as lists, number keys as text; None stays None."""
    if isinstance(value, SetRef):
        return {"round": value.round, "team": value.team, "challenge": value.challenge, "key": value.key}
    if isinstance(value, _Record):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class _Record:
    """A JSON object of fixed keys, one per field. ``_CONVERT``: field -> converter of its JSON value
    (default: kept as it is); ``_OPTIONAL``: fields a stored snapshot may lack (None here, left out of
    the JSON when None)."""

    _CONVERT: ClassVar[dict[str, Callable]] = {}
    _OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_json(cls, obj):
        obj = _object(obj, cls.__name__)
        names = [f.name for f in fields(cls)]
        _check_keys(cls.__name__, obj, [n for n in names if n not in cls._OPTIONAL], cls._OPTIONAL)
        try:
            return cls(**{n: cls._CONVERT.get(n, _same)(obj[n]) if n in obj else None for n in names})
        except SnapshotSchemaError as exc:
            raise SnapshotSchemaError(f"{cls.__name__}: {exc}") from exc

    def to_json(self) -> dict:
        return {f.name: as_json(getattr(self, f.name)) for f in fields(self)
                if not (f.name in self._OPTIONAL and getattr(self, f.name) is None)}


def _records(cls) -> Callable:
    return _tuple(cls.from_json)


# ---------------------------------------------------------------- the judge's results (scoring.results)
@dataclass(frozen=True)
class RoundWeight(_Record):
    """A counted round's weight in the totals (rules §9)."""

    round: int
    weight: float


@dataclass(frozen=True)
class SetEntry(_Record):
    """One final set's minima (``scoring.results.SetResult``): 0 for an invalid set; ``*_by`` the
    attackers (team numbers, judge attack names) whose best attempt is the minimum; ``submitted_at``
    its final upload (ISO 8601, None for the benchmark)."""

    _CONVERT: ClassVar = {"set": _set_ref, "s_i_min_by": _tuple(_same), "s_t_min_by": _tuple(_same)}

    set: SetRef
    s_u: float
    valid: bool
    benchmark: bool
    submitted_at: str | None
    s_i_min: float
    s_t_min: float
    n_attacks_i: int
    n_attacks_t: int
    s_i_min_by: tuple[int | str, ...]
    s_t_min_by: tuple[int | str, ...]


@dataclass(frozen=True)
class TeamTotal(_Record):
    """A team's quantities (rules §9), weighted over the counted rounds; ``attack_sum_*`` lower is a
    stronger attacker."""

    team: int
    s_i_min: float
    s_t_min: float
    overall: float
    attack_sum_i: float
    attack_sum_t: float


@dataclass(frozen=True)
class TeamRound(TeamTotal):
    """A team's quantities in one round, unweighted; ``n_targets``: the valid sets it could attack."""

    round: int
    n_targets: int


@dataclass(frozen=True)
class Cell(_Record):
    """The attack matrix: ``attacker``'s best (lowest) score of ``kind`` on ``set`` over ``attempts``."""

    _CONVERT: ClassVar = {"set": _set_ref}

    attacker: int | str
    set: SetRef
    kind: str
    best: float
    attempts: int


@dataclass(frozen=True)
class Place(_Record):
    """A team's place in a ranking (an award's standing or a leaderboard), 1 = best; ``tied``: another
    team has the same value to 12 decimals (None: an award's standing stored before ties were marked);
    ``final_submission_at`` ISO 8601 or None."""

    _OPTIONAL: ClassVar = ("tied",)

    position: int
    team: int
    value: float
    final_submission_at: str | None
    tied: bool | None = None


@dataclass(frozen=True)
class AwardEntry(_Record):
    """An award or an overall place (``scoring.results.Award``): ``decided_by`` "score", a tie-break
    or "sole-candidate"; ``tied_with`` and ``excluded`` team numbers."""

    _CONVERT: ClassVar = {"tied_with": _tuple(_same), "excluded": _tuple(_same)}

    award: str
    place: int
    team: int
    value: float
    decided_by: str
    tied_with: tuple[int, ...]
    excluded: tuple[int, ...]


# ---------------------------------------------------------------- what the snapshot counts
@dataclass(frozen=True)
class RoundState(_Record):
    """A round of the contest: ``played`` (its sets pseudonymized) and ``included`` (counted here)."""

    number: int
    name: str
    weight: float
    played: bool
    included: bool


@dataclass(frozen=True)
class Standing(_Record):
    """Which rounds the snapshot counts and whether the standings are final (every round counted)."""

    _CONVERT: ClassVar = {"rounds": _records(RoundState)}

    rounds: tuple[RoundState, ...]
    through_round: int | None
    final: bool


@dataclass(frozen=True)
class Correlation(_Record):
    """Paper Fig. 9's R of s_I,min and s_T,min over a round's ``n_sets`` valid team sets (None: fewer
    than two sets or a constant score)."""

    r: float | None
    n_sets: int


# ---------------------------------------------------------------- rules §13 analyses, paper Fig. 8
@dataclass(frozen=True)
class UtilityFigures(_Record):
    """The three rules §13 utility figures of a set (None: not computable, e.g. no POIs)."""

    tp_tv_top50: float | None
    tm_emd: float | None
    poi_accuracy: float | None


@dataclass(frozen=True)
class UtilityAnalysis(UtilityFigures):
    """A valid final team set's figures (``set_id`` its AnonymizedSet) with its data set's baselines."""

    _CONVERT: ClassVar = {"reference": UtilityFigures.from_json, "uniform": UtilityFigures.from_json}

    challenge: int
    team: int
    set_id: int
    s_u: float
    reference: UtilityFigures
    uniform: UtilityFigures


@dataclass(frozen=True)
class FairnessRow(_Record):
    """Paper Appendix E: a fixed anonymizer on every team's data of a challenge; the SD over the teams
    of s_I,min and s_T,min (None: undefined), ``teams``: team -> (s_I,min, s_T,min)."""

    _CONVERT: ClassVar = {"params": _by_name(_same), "teams": _by_number(_pair)}

    challenge: int
    label: str
    algorithm: str
    params: dict[str, Any]
    n_teams: int
    sd_s_i_min: float | None
    sd_s_t_min: float | None
    teams: dict[int, tuple[float, float]]


@dataclass(frozen=True)
class RoundAnalyses(_Record):
    _CONVERT: ClassVar = {"utility": _records(UtilityAnalysis), "fairness": _records(FairnessRow)}

    utility: tuple[UtilityAnalysis, ...]
    fairness: tuple[FairnessRow, ...]


@dataclass(frozen=True)
class Analyses(_Record):
    """The figures of rules §13 per round (``contest.services.analyses``), or the ``error`` that stopped them
    (then ``rounds`` is empty and the other fields None)."""

    _CONVERT: ClassVar = {"rounds": _by_number(RoundAnalyses.from_json)}
    _OPTIONAL: ClassVar = ("n_projections", "seed", "poi_source", "error")

    rounds: dict[int, RoundAnalyses]
    n_projections: int | None = None
    seed: int | None = None
    poi_source: str | None = None
    error: str | None = None

    def to_json(self) -> dict:
        if self.error is not None:
            return {"rounds": as_json(self.rounds), "error": self.error}
        return {"rounds": as_json(self.rounds), "n_projections": self.n_projections, "seed": self.seed,
                "poi_source": self.poi_source}


@dataclass(frozen=True)
class SampleAnonymizer(_Record):
    """Paper Fig. 8: a sample anonymizer on the round's sample set, attacked by the judge's attacks."""

    _CONVERT: ClassVar = {"params": _by_name(_same)}

    label: str
    algorithm: str
    params: dict[str, Any]
    s_u: float
    valid: bool
    s_i_min: float
    s_t_min: float


@dataclass(frozen=True)
class SampleAnonymizers(_Record):
    """Fig. 8's rows per round, or the ``error`` that stopped them. JSON: ``{"<round>": [row, ...]}``
    or ``{"error": text}``."""

    rounds: dict[int, tuple[SampleAnonymizer, ...]]
    error: str | None = None

    @classmethod
    def from_json(cls, obj):
        obj = _object(obj, "sample_anonymizers")
        if "error" in obj:
            _check_keys("sample_anonymizers", obj, ("error",))
            return cls(rounds={}, error=obj["error"])
        return cls(rounds=_by_number(_records(SampleAnonymizer))(obj))

    def to_json(self) -> dict:
        return {"error": self.error} if self.error is not None else as_json(self.rounds)


# ---------------------------------------------------------------- intervals (scoring.uncertainty)
@dataclass(frozen=True)
class SetIntervals(_Record):
    """A set's intervals ``(lo, hi)`` of s_U and its two minima."""

    _CONVERT: ClassVar = {"s_u": _pair, "s_i_min": _pair, "s_t_min": _pair}

    s_u: tuple[float, float]
    s_i_min: tuple[float, float]
    s_t_min: tuple[float, float]


@dataclass(frozen=True)
class PlaceUncertainty(_Record):
    """A leaderboard place's interval, its swap probability with the next place (None: the last place,
    or a snapshot computed before it was kept) and whether that marks a statistical tie."""

    _CONVERT: ClassVar = {"interval": _pair}
    _OPTIONAL: ClassVar = ("swap_next",)

    team: int
    interval: tuple[float, float]
    tied_next: bool
    swap_next: float | None = None

    def to_json(self) -> dict:
        # swap_next is written even when None (the last place), as results_uncertainty writes it
        return {"team": self.team, "interval": as_json(self.interval), "swap_next": self.swap_next,
                "tied_next": self.tied_next}


@dataclass(frozen=True)
class Uncertainty(_Record):
    """``scoring.uncertainty.results_uncertainty``'s intervals (set key -> :class:`SetIntervals`,
    leaderboard -> places), award stability (``"<award>-<place>"`` -> share in [0, 1]), or the
    ``error`` that stopped them (then everything else is empty)."""

    _CONVERT: ClassVar = {"sets": _by_name(SetIntervals.from_json),
                          "leaderboards": _by_name(_records(PlaceUncertainty)), "awards": _by_name(_same)}
    _OPTIONAL: ClassVar = ("error",)

    method: str
    replicates: int
    level: float
    tie_probability: float
    sets: dict[str, SetIntervals]
    leaderboards: dict[str, tuple[PlaceUncertainty, ...]]
    awards: dict[str, float]
    error: str | None = None

    @classmethod
    def from_json(cls, obj):
        obj = _object(obj, "uncertainty")
        if "error" in obj:
            _check_keys("uncertainty", obj, ("error",))
            return cls(method="", replicates=0, level=0.0, tie_probability=1.0, sets={}, leaderboards={},
                       awards={}, error=obj["error"])
        return super().from_json(obj)

    def to_json(self) -> dict:
        if self.error is not None:
            return {"error": self.error}
        return {f.name: as_json(getattr(self, f.name)) for f in fields(self) if f.name != "error"}

    def places(self, board: str) -> tuple[PlaceUncertainty, ...]:
        """The places of leaderboard ``board``, in its order (none if not computed)."""
        return self.leaderboards.get(board, ())


# ---------------------------------------------------------------- the snapshot
_NUMBER_NAMES = _by_number(str)


@dataclass(frozen=True)
class SnapshotData(_Record):
    """Everything a results snapshot stores (``ResultsSnapshot.data``), as the pages, CSVs and API read it.

    The fields from ``variant`` to ``leaderboards`` are ``scoring.results.Results`` (``standings``:
    award -> places; ``leaderboards``: ``"total"``, ``"round-R"``, ``"round-R-challenge-C"`` -> places,
    in the judge's order). ``standing``: the rounds counted; ``correlation``: round -> Fig. 9's R.
    ``team_names``/``round_names``: the names when computed. None: a part this snapshot does not have
    (see the module docstring).
    """

    _CONVERT: ClassVar = {
        "team_names": _NUMBER_NAMES, "round_names": _NUMBER_NAMES,
        "round_weights": _records(RoundWeight), "teams": _tuple(_same), "sets": _records(SetEntry),
        "team_rounds": _records(TeamRound), "team_totals": _records(TeamTotal), "matrix": _records(Cell),
        "awards": _records(AwardEntry), "standings": _by_name(_records(Place)), "ignored": _tuple(_same),
        "leaderboards": _by_name(_records(Place)), "standing": Standing.from_json,
        "correlation": _by_number(Correlation.from_json), "analyses": Analyses.from_json,
        "sample_anonymizers": SampleAnonymizers.from_json, "uncertainty": Uncertainty.from_json}
    _OPTIONAL: ClassVar = ("contest", "team_names", "round_names", "analyses", "sample_anonymizers", "uncertainty")

    version: int
    variant: str
    tie_break: str
    round_weights: tuple[RoundWeight, ...]
    teams: tuple[int, ...]
    benchmark_team: int | None
    sets: tuple[SetEntry, ...]
    team_rounds: tuple[TeamRound, ...]
    team_totals: tuple[TeamTotal, ...]
    matrix: tuple[Cell, ...]
    awards: tuple[AwardEntry, ...]
    standings: dict[str, tuple[Place, ...]]
    ignored: tuple[str, ...]
    leaderboards: dict[str, tuple[Place, ...]]
    standing: Standing
    correlation: dict[int, Correlation]
    contest: str | None = None
    team_names: dict[int, str] | None = None
    round_names: dict[int, str] | None = None
    analyses: Analyses | None = None
    sample_anonymizers: SampleAnonymizers | None = None
    uncertainty: Uncertainty | None = None

    # ----- look-ups the pages share
    def sets_of(self, round_no: int | None = None) -> list[SetEntry]:
        """The sets of round ``round_no`` (None: every round) by round, team and challenge."""
        out = [s for s in self.sets if round_no is None or s.set.round == round_no]
        return sorted(out, key=lambda s: (s.set.round, s.set.team, s.set.challenge))

    def leaderboard(self, name: str) -> tuple[Place, ...]:
        """A leaderboard (``scoring.results.leaderboard_name``), best first; empty if the snapshot has none."""
        return self.leaderboards.get(name, ())

    def round_state(self, number) -> RoundState | None:
        return next((r for r in self.standing.rounds if r.number == number), None)

    def counts_round(self, number) -> bool:
        """Whether round ``number`` is played and counted in this snapshot."""
        state = self.round_state(number)
        return state is not None and state.included

    def set_intervals(self, key: str) -> SetIntervals | None:
        """The intervals of the set ``key`` (``SetRef.key``), None if not computed."""
        return None if self.uncertainty is None else self.uncertainty.sets.get(key)

    def board_uncertainty(self, board: str) -> tuple[PlaceUncertainty, ...]:
        return () if self.uncertainty is None else self.uncertainty.places(board)

    def award_stability(self, award: str, place: int) -> float | None:
        return None if self.uncertainty is None else self.uncertainty.awards.get(f"{award}-{place}")

    def samples_of(self, round_no) -> tuple[SampleAnonymizer, ...]:
        """Fig. 8's rows of round ``round_no`` (none if not computed or failed)."""
        return () if self.sample_anonymizers is None else self.sample_anonymizers.rounds.get(round_no, ())

    def analyses_of(self, round_no) -> RoundAnalyses | None:
        return None if self.analyses is None else self.analyses.rounds.get(round_no)


def read(data) -> SnapshotData:
    """The :class:`SnapshotData` of stored snapshot JSON; :class:`SnapshotSchemaError` if it is not of
    :data:`VERSION` or does not fit the schema (the message names the key)."""
    data = _object(data, "results snapshot")
    if "version" not in data:
        raise SnapshotSchemaError("a results snapshot without a version: it was stored before versions and "
                                  "not migrated (run manage.py migrate: 0016_snapshot_schema_version)")
    if data["version"] != VERSION:
        raise SnapshotSchemaError(f"a results snapshot of version {data['version']!r}: this site reads version "
                                  f"{VERSION} only (contest/services/results_snapshot.py)")
    return SnapshotData.from_json(data)


def to_json(snapshot: SnapshotData) -> dict:
    """The JSON a :class:`SnapshotData` is stored as (``ResultsSnapshot.data``)."""
    return snapshot.to_json()


def build(results, *, contest: str, team_names: dict[int, str], round_names: dict[int, str], standing: dict,
          correlation: dict, analyses: dict, sample_anonymizers: dict, uncertainty: dict) -> SnapshotData:
    """The snapshot of one computation: ``results`` (``scoring.results.Results``) with the contest's
    slug, its team and round names (number -> name), ``standing`` (``results.standing``), ``correlation``
    (``results.set_correlations``), ``analyses`` (``analyses.for_snapshot``), ``sample_anonymizers``
    (``round_figures.sample_anonymizers_for_snapshot``) and ``uncertainty``
    (``results.uncertainty_for_snapshot``), each as its service returns it. Every part is checked
    against the schema here, so a part of a new shape fails the job that computes it, not a page."""
    return read({**results.to_dict(), "version": VERSION, "contest": contest,
                 "team_names": {str(k): v for k, v in team_names.items()},
                 "round_names": {str(k): v for k, v in round_names.items()}, "standing": standing,
                 "correlation": correlation, "analyses": analyses, "sample_anonymizers": sample_anonymizers,
                 "uncertainty": as_json(uncertainty)})
