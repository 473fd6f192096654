"""Results, awards, re-scores and publication (SPEC 7, 8.6, 9).

Results are never stored as the source of truth: :func:`compute` rebuilds
them from the current score rows with the pure ``scoring.results``
function, so a late attack or a re-score changes exactly what it touches.
A :class:`~contest.models.ResultsSnapshot` freezes one computation (with its
awards) when the organizers publish.

Decision (SPEC "a freeze time is a setting"): when ``Contest.freeze_at`` is
set, the results count only team attacks uploaded up to that time; later
attacks are still scored and shown to their own team. (Final anonymized
sets are fixed by the phase close, and judge attacks always count.)
"""
from __future__ import annotations

import hashlib
import json
import logging

import numpy as np
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from contest.models import (
    AnonymizedSet,
    Attack,
    Award,
    Contest,
    Dataset,
    JudgeAttackResult,
    PublicSet,
    ResultsSnapshot,
    Round,
    Score,
)
from contest.services import analyses, audit, jobs, samples
from scoring.results import (
    BEST_ANONYMIZER,
    BEST_ANONYMIZER_REID,
    BEST_ANONYMIZER_TRACE,
    BEST_ATTACKER_REID,
    BEST_ATTACKER_TRACE,
    OVERALL,
    AttackRow,
    SetRef,
    UtilityRow,
    compute_results,
)
from scoring.seeds import derived_seed
from scoring.uncertainty import results_uncertainty
from scoring.vocabulary import AttackKind

log = logging.getLogger(__name__)

#: Award name (``scoring.results``) -> (title, rule in the paper's notation): the one table of award
#: titles. Titles are marked for translation; the pages translate them, the stored Award row keeps English.
AWARD_TITLES = {
    OVERALL: (gettext_noop("Overall"), "highest s_I,min(t,1) + s_T,min(t,2)"),
    BEST_ANONYMIZER_REID: (gettext_noop("Best anonymizer (re-identification)"), "highest s_I,min(t,1)"),
    BEST_ANONYMIZER_TRACE: (gettext_noop("Best anonymizer (trace inference)"), "highest s_T,min(t,2)"),
    BEST_ANONYMIZER: (gettext_noop("Best anonymization"), "highest s_T,min(t,2)"),
    BEST_ATTACKER_REID: (gettext_noop("Best attacker (re-identification)"), "lowest attacker sum of s_I"),
    BEST_ATTACKER_TRACE: (gettext_noop("Best attacker (trace inference)"), "lowest attacker sum of s_T"),
}


def award_title(name: str, place: int | None = None) -> tuple[str, str]:
    """(English title, rule) of award ``name``; the overall award's title names its ``place``."""
    title, rule = AWARD_TITLES.get(name, (name.replace("_", " ").capitalize(), ""))
    if name == OVERALL and place is not None:
        title = f"{title}, place {place}"
    return title, rule


def score_rows(contest: Contest):
    """(teams, round_weights, utility rows, attack rows, benchmark team) from the current score rows."""
    rounds = list(Round.objects.filter(contest=contest))
    teams = sorted(contest.teams.filter(approved=True).values_list("number", flat=True))
    utility = []
    bench_numbers = set(Dataset.objects.filter(round__contest=contest, kind=Dataset.BENCHMARK)
                        .values_list("number", flat=True))
    if len(bench_numbers) > 1:
        raise ValueError(f"benchmark datasets carry different team numbers {sorted(bench_numbers)}")
    for aset in (AnonymizedSet.objects.filter(dataset__round__contest=contest, final=True)
                 .select_related("dataset__round", "team")):
        if aset.s_u is None:
            continue
        ds = aset.dataset
        utility.append(UtilityRow(SetRef(ds.round.number, ds.number, ds.challenge), float(aset.s_u),
                                  bool(aset.valid), aset.created_at))
    for ds in Dataset.objects.filter(round__contest=contest, kind=Dataset.BENCHMARK, public_set__isnull=False):
        # The benchmark is O itself, pseudonymized only: its utility is 1 by definition.
        utility.append(UtilityRow(SetRef(ds.round.number, ds.number, ds.challenge), 1.0, True, None))
    rows = (Score.objects.filter(dataset__round__contest=contest, current=True, metric__in=tuple(AttackKind))
            .defer("per_user"))
    attacks = [row for row, _ in _counted_attack_scores(contest, rows)]
    weights = {r.number: float(r.weight) for r in rounds}
    return teams, weights, utility, attacks, (bench_numbers.pop() if bench_numbers else None)


def _counted_attack_scores(contest: Contest, rows):
    """(AttackRow, Score) of the attack score rows ``rows`` that the results count: team attacks up to
    the freeze time, judge attacks if the contest runs them."""
    freeze = contest.freeze_at
    for s in rows.select_related("dataset__round", "attack__attacker", "judge_attack"):
        ds = s.dataset
        ref = SetRef(ds.round.number, ds.number, ds.challenge)
        if s.attack_id:
            if freeze and s.attack.created_at > freeze:
                continue
            yield AttackRow(ref, s.attack.attacker.number, AttackKind(s.metric), float(s.value),
                            s.attack.created_at), s
        elif s.judge_attack_id:
            if not contest.judge_attacks_enabled:
                continue
            yield AttackRow(ref, s.judge_attack.algorithm, AttackKind(s.metric), float(s.value),
                            s.judge_attack.created_at), s


def _vectors(per_user: dict | None) -> dict | None:
    return {k: np.asarray(v, dtype=np.float64) for k, v in per_user.items()} if per_user else None


def score_vectors(contest: Contest) -> tuple[dict, list]:
    """The per-user parts of the scores the results count (``scoring.uncertainty``'s input):
    SetRef -> utility parts of each final set, and (AttackRow, parts or None) per counted attack row."""
    utility = {}
    for s in Score.objects.filter(dataset__round__contest=contest, current=True, metric=Score.UTILITY,
                                  anonymized_set__final=True).select_related("dataset__round"):
        ds = s.dataset
        utility[SetRef(ds.round.number, ds.number, ds.challenge)] = _vectors(s.per_user)
    rows = Score.objects.filter(dataset__round__contest=contest, current=True, metric__in=tuple(AttackKind))
    attacks = [(row, _vectors(s.per_user)) for row, s in _counted_attack_scores(contest, rows)]
    return {k: v for k, v in utility.items() if v is not None}, attacks


def uncertainty_for_snapshot(contest: Contest, res) -> dict:
    """Bootstrap intervals, swap probabilities and award stability of ``res`` for the snapshot
    (``scoring.uncertainty.results_uncertainty``, seeded by the contest); a failure is recorded, not raised."""
    try:
        utility, attacks = score_vectors(contest)
        return results_uncertainty(res, utility, attacks, seed=derived_seed(contest.seed, "bootstrap"))
    except Exception as exc:  # noqa: BLE001 - the snapshot must still be stored
        log.exception("uncertainty of %s failed", contest.slug)
        return {"error": f"{type(exc).__name__}: {exc}"}


def compute(contest: Contest):
    """The contest's :class:`scoring.results.Results` from its current score rows."""
    teams, weights, utility, attacks, bench = score_rows(contest)
    return compute_results(teams=teams, round_weights=weights, utility=utility, attacks=attacks,
                           benchmark_team=bench, variant=contest.award_variant, tie_break=contest.tie_break)


def results_dict(contest: Contest) -> dict:
    """Results as JSON-able data, with team names and round names for display."""
    res = compute(contest).to_dict()
    res["team_names"] = {str(t.number): t.name for t in contest.teams.all()}
    res["round_names"] = {str(r.number): r.name for r in contest.rounds.all()}
    res["contest"] = contest.slug
    res["computed_at"] = timezone.now().isoformat()
    return res


def snapshot(contest: Contest, *, user=None) -> ResultsSnapshot:
    """Compute and store the results and their awards (unpublished)."""
    res = compute(contest)
    payload = res.to_dict()
    payload["team_names"] = {str(t.number): t.name for t in contest.teams.all()}
    payload["round_names"] = {str(r.number): r.name for r in contest.rounds.all()}
    payload["contest"] = contest.slug
    payload["analyses"] = analyses.for_snapshot(contest)  # SPEC 13 utility and fairness figures
    payload["sample_anonymizers"] = samples.for_snapshot(contest)  # paper Fig. 8, per round
    payload["uncertainty"] = uncertainty_for_snapshot(contest, res)  # bootstrap intervals (issue 16)
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    teams = {t.number: t for t in contest.teams.all()}
    with transaction.atomic():
        snap = ResultsSnapshot.objects.create(contest=contest, data=payload, sha256=digest,
                                              created_by=user if getattr(user, "is_authenticated", False) else None)
        for a in res.awards:
            name = a.award if a.award != "overall" else f"overall-{a.place}"
            Award.objects.create(snapshot=snap, award=name,
                                 title=award_title(a.award, a.place)[0],
                                 team=teams[a.team], value=float(a.value))
        audit.record("snapshot_results", contest=contest, actor=user, obj=snap, sha256=digest)
    return snap


@jobs.handles("compute_results")
def compute_results_job(job, contest_id: int, publish: bool = False) -> str:
    contest = Contest.objects.get(pk=contest_id)
    snap = publish_results(contest, user=job.created_by) if publish else snapshot(contest, user=job.created_by)
    return f"results snapshot {snap.pk} ({'published' if snap.published else 'embargoed'})"


def publish_results(contest: Contest, *, user=None) -> ResultsSnapshot:
    """Snapshot the results now and publish them (ends the embargo)."""
    snap = snapshot(contest, user=user)
    now = timezone.now()
    with transaction.atomic():
        ResultsSnapshot.objects.filter(pk=snap.pk).update(published=True, published_at=now)
        Contest.objects.filter(pk=contest.pk).update(results_published_at=now)
        audit.record("publish_results", contest=contest, actor=user, obj=snap, sha256=snap.sha256)
    snap.refresh_from_db()
    contest.results_published_at = now
    return snap


def request_results(contest: Contest, *, user=None, publish: bool = False):
    """Queue computing the results snapshot from the score rows (and publishing it); returns the job."""
    with transaction.atomic():
        if publish:
            return jobs.create_job("compute_results", contest=contest, user=user, contest_id=contest.pk, publish=True)
        return jobs.create_job("compute_results", contest=contest, user=user, contest_id=contest.pk)


def request_rescore(contest: Contest, *, user=None):
    """Queue re-scoring every upload and judge attack of the contest; returns the job."""
    with transaction.atomic():
        return jobs.create_job("rescore", contest=contest, user=user, contest_id=contest.pk)


def unpublish_results(contest: Contest, *, user=None) -> int:
    """Embargo the results again (the snapshots are kept); returns how many were published."""
    with transaction.atomic():
        n = ResultsSnapshot.objects.filter(contest=contest, published=True).update(published=False)
        Contest.objects.filter(pk=contest.pk).update(results_published_at=None)
        audit.record("unpublish_results", contest=contest, actor=user, obj=contest, snapshots=n)
    contest.results_published_at = None
    return n


def published_snapshot(contest: Contest) -> ResultsSnapshot | None:
    return ResultsSnapshot.objects.filter(contest=contest, published=True).order_by("-published_at", "-id").first()


def rescore(contest: Contest, *, user=None, job=None) -> dict:
    """Queue re-validating and re-scoring every upload and re-running the judge attacks.

    One job per scored object (each anonymized set, each attack upload, each
    public set's judge attacks), so a final-size contest never needs one task
    longer than the time limit, and the workers share the work. Old score rows
    and judge results are kept with ``current=False``; the new rows replace
    them. Used after a scoring fix or a parameter change. Returns the number of
    jobs queued per kind.
    """
    asets = list(AnonymizedSet.objects.filter(dataset__round__contest=contest).values_list("pk", flat=True))
    attacks = list(Attack.objects.filter(target__dataset__round__contest=contest).values_list("pk", flat=True))
    public_sets = (list(PublicSet.objects.filter(dataset__round__contest=contest).values_list("pk", flat=True))
                   if contest.judge_attacks_enabled else [])
    actor = user if user is not None else getattr(job, "created_by", None)
    with transaction.atomic():
        JudgeAttackResult.objects.filter(public_set__dataset__round__contest=contest, current=True).update(current=False)
        Score.objects.filter(dataset__round__contest=contest, judge_attack__isnull=False, current=True).update(current=False)
        audit.record("rescore", contest=contest, actor=actor, n_sets=len(asets), n_attacks=len(attacks),
                     n_public_sets=len(public_sets))
        for pk in asets:
            jobs.create_job("score_anonymized", contest=contest, user=actor, anonymized_set_id=pk, force=True)
        for pk in attacks:
            jobs.create_job("score_attack", contest=contest, user=actor, attack_id=pk, force=True)
        for pk in public_sets:
            jobs.create_job("judge_attacks", contest=contest, user=actor, public_set_id=pk)
    return {"anonymized_sets": len(asets), "attacks": len(attacks), "judge_attacks": len(public_sets)}


@jobs.handles("rescore")
def rescore_job(job, contest_id: int) -> str:
    counts = rescore(Contest.objects.get(pk=contest_id), job=job)
    return "queued re-scoring: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
