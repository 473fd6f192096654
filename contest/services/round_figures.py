"""Figures of a round's generated data alone, computed once per round by jobs.

Two results figures depend on nothing the teams upload, only on the round's
generated data and the contest's judge settings:

- **fairness** (paper Appendix E, Table 2; rules §13): the paper's four fixed
  anonymizers run on every team's original traces and attacked by the judge
  attacks; per challenge, the SD over teams of s_I,min and s_T,min;
- **sample anonymizers** (paper Fig. 8): the sample anonymizers on the round's
  first sample set, attacked the same way.

At the 2019 size they are about a thousand attack runs, minutes of work. They
used to be recomputed by every results snapshot (twice per round: at the attack
phase's close and at publishing). Now a ``round_figures`` job per part (one
per team data set's fairness, i.e. per team and challenge, and one for the
sample anonymizers, so the judge's workers share them) runs once,
queued when the round's data is generated, and
stores a :class:`~contest.models.RoundFigures` row with the SHA-256 of its
inputs (data files, seed, judge attacks and scoring parameters). A snapshot
reads the stored part whose inputs still match, and computes (and stores) a
part that is missing or stale, so a changed parameter never shows an old figure.
A challenge's fairness rows (the SD over teams) are combined from its teams'
parts when read.
"""
from __future__ import annotations

import hashlib
import json
import logging

from django.db import IntegrityError, transaction

from contest import job_kinds
from contest.models import Dataset, Round, RoundFigures
from contest.services import jobs
from contest.services.job_messages import say
from contest.services.samples import DEFAULT_SAMPLE_ANONYMIZERS, evaluate_sample_anonymizers
from scoring.analyses import fairness

log = logging.getLogger(__name__)

#: Paper Appendix E, Table 2: (label, registered anonymizer, parameters).
FAIRNESS_ANONYMIZERS = (
    ("No obfuscation", "A1-none", {}),
    ("MRLH(1,1,0.5)", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
    ("RR(1)", "A3-kRR", {"eps": 1.0}),
    ("PL(1,1)", "A4-PL", {"l": 1.0, "r": 1.0}),
)

SAMPLES = "sample_anonymizers"
FAIRNESS = "fairness-{challenge}-{team}"


def fairness_parts(round_: Round) -> dict[int, dict[int, str]]:
    """challenge -> team -> the fairness part of that team's data set of the challenge."""
    out: dict[int, dict[int, str]] = {}
    for challenge, team in (Dataset.objects.filter(round=round_, kind=Dataset.TEAM)
                            .order_by("challenge", "number").values_list("challenge", "number")):
        out.setdefault(challenge, {})[team] = FAIRNESS.format(challenge=challenge, team=team)
    return out


def _fairness_set(part: str) -> tuple[int, int]:
    """(challenge, team) of a fairness part's name."""
    _name, challenge, team = part.rsplit("-", 2)
    return int(challenge), int(team)


def parts(round_: Round) -> list[str]:
    """The parts of ``round_``: one fairness part per team data set (team x challenge), and the sample
    anonymizers."""
    return [part for by_team in fairness_parts(round_).values() for part in by_team.values()] + [SAMPLES]


def inputs_key(round_: Round, part: str) -> str:
    """SHA-256 of everything ``part`` depends on: the data files it reads, the contest's seed, judge
    attacks and scoring parameters, and the anonymizers it runs."""
    contest = round_.contest
    if part == SAMPLES:
        which = Dataset.objects.filter(round=round_, kind=Dataset.SAMPLE)
    else:
        challenge, team = _fairness_set(part)
        which = Dataset.objects.filter(round=round_, kind=Dataset.TEAM, challenge=challenge, number=team)
    files = list(which.order_by("kind", "number", "challenge")
                 .values_list("kind", "number", "challenge", "original__sha256", "reference__sha256"))
    settings = {"part": part, "files": files, "seed": contest.seed, "attacks": list(contest.judge_attacks),
                "lambda_t": contest.lambda_t, "hospital_weight": contest.hospital_weight, "s_req": contest.s_req,
                "convention": contest.utility_convention, "lambda_u": contest.lambda_u,
                "axis": [contest.slots_per_day, round_.ref_days, round_.org_days, contest.day_start_minute,
                         contest.slot_minutes],
                "configs": DEFAULT_SAMPLE_ANONYMIZERS if part == SAMPLES else FAIRNESS_ANONYMIZERS}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def compute(round_: Round, part: str):
    """The figure ``part`` of ``round_``, computed now (see the module docstring)."""
    contest = round_.contest
    if part == SAMPLES:
        dataset = (Dataset.objects.filter(round=round_, kind=Dataset.SAMPLE)
                   .select_related("reference", "original", "round").order_by("number", "challenge").first())
        return None if dataset is None else evaluate_sample_anonymizers(contest, dataset)
    challenge, team = _fairness_set(part)
    dataset = (Dataset.objects.filter(round=round_, kind=Dataset.TEAM, challenge=challenge, number=team)
               .select_related("round__contest", "original", "reference").get())
    return evaluate_sample_anonymizers(contest, dataset, FAIRNESS_ANONYMIZERS)


def fairness_rows(challenge: int, per_team: dict, configs=FAIRNESS_ANONYMIZERS) -> list[dict]:
    """Per fixed anonymizer: the SD over teams of s_I,min and s_T,min on challenge ``challenge``'s data,
    from each team's part (team -> the rows of :func:`evaluate_sample_anonymizers` on its data set)."""
    out = []
    for i, (label, name, params) in enumerate(configs):
        s_i = {t: r[i]["s_i_min"] for t, r in per_team.items()}
        s_t = {t: r[i]["s_t_min"] for t, r in per_team.items()}
        sd_i, sd_t = fairness(s_i), fairness(s_t)
        out.append({"challenge": challenge, "label": label, "algorithm": name, "params": params,
                    "n_teams": len(per_team),
                    "sd_s_i_min": None if sd_i != sd_i else sd_i, "sd_s_t_min": None if sd_t != sd_t else sd_t,
                    "teams": {str(t): [s_i[t], s_t[t]] for t in sorted(per_team)}})
    return out


def get_or_compute(round_: Round, part: str, *, recompute: bool = False):
    """The stored figure ``part`` if its inputs still match, else (or with ``recompute``) computed now and
    stored."""
    key = inputs_key(round_, part)
    row = RoundFigures.objects.filter(round=round_, part=part).first()
    if row is not None and row.inputs == key and not recompute:
        return row.data
    value = compute(round_, part)
    try:
        with transaction.atomic():
            RoundFigures.objects.update_or_create(round=round_, part=part, defaults={"inputs": key, "data": value})
    except IntegrityError:
        pass  # a concurrent job stored the same figure first
    return value


@jobs.handles(job_kinds.ROUND_FIGURES)
def round_figures_job(job, round_id: int, part: str) -> str:
    round_ = Round.objects.select_related("contest").get(pk=round_id)
    get_or_compute(round_, part)
    return say("%(part)s of %(round)s", part=part, round=round_.name)


def request(round_: Round, *, user=None) -> list:
    """Queue a job per part of ``round_`` (after its data is generated)."""
    with transaction.atomic():
        return [jobs.create_job(job_kinds.ROUND_FIGURES, contest=round_.contest, user=user, round_id=round_.pk, part=part)
                for part in parts(round_)]


def fairness_for(round_: Round, *, recompute: bool = False) -> list[dict]:
    """Every challenge's fairness rows of ``round_``, combined from its teams' parts (stored, or computed
    now)."""
    return [row for challenge, by_team in fairness_parts(round_).items()
            for row in fairness_rows(challenge, {team: get_or_compute(round_, part, recompute=recompute)
                                                 for team, part in by_team.items()})]


def sample_anonymizers_for_snapshot(contest, *, recompute: bool = False) -> dict:
    """``{"<round>": [row, ...]}`` of every round with a sample set, for the results snapshot.

    A failure is recorded, not raised (as for the analyses), so the results are never held back.
    """
    out = {}
    try:
        for round_ in Round.objects.filter(contest=contest).select_related("contest").order_by("number"):
            if not Dataset.objects.filter(round=round_).exists():
                continue
            rows = get_or_compute(round_, SAMPLES, recompute=recompute)
            if rows is not None:
                out[str(round_.number)] = rows
    except Exception as exc:  # noqa: BLE001 - the snapshot must still be stored
        log.exception("sample anonymizers of contest %s failed", contest.slug)
        return {"error": f"{type(exc).__name__}: {exc}"}
    return out
