"""Results, awards, re-scores and publication (rules §7, 8.6, 9).

Results are never stored as the source of truth: :func:`compute` rebuilds
them from the current score rows with the pure ``scoring.results``
function, so a late attack or a re-score changes exactly what it touches.
A :class:`~contest.models.ResultsSnapshot` freezes one computation (with its
awards) when the organizers publish.

Decision (rules §8.6: "a freeze time is a setting"): when ``Contest.freeze_at`` is
set, the results count only team attacks uploaded up to that time; later
attacks are still scored and shown to their own team. (Final anonymized
sets are fixed by the phase close, and judge attacks always count.)
"""
from __future__ import annotations

import hashlib
import json
import logging
import math

import numpy as np
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from contest import job_kinds
from contest.models import (
    AnonymizedSet,
    Attack,
    Award,
    Contest,
    Dataset,
    JudgeAttackResult,
    Phase,
    PublicSet,
    ResultsSnapshot,
    Round,
    Score,
)
from contest.request_start import deadline_grace
from contest.services import analyses, audit, jobs, results_snapshot, round_figures
from contest.services.errors import ServiceError
from contest.services.job_messages import say
from scoring.analyses import correlation
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
    leaderboards_of,
)
from scoring.seeds import derived_seed
from scoring.uncertainty import results_uncertainty
from scoring.vocabulary import AttackKind

log = logging.getLogger(__name__)

#: Award name (``scoring.results``) -> (title, rule in the paper's notation): the one table of award
#: titles. Titles and rules are marked for translation; the pages translate them, the stored Award row
#: keeps English.
AWARD_TITLES = {
    OVERALL: (gettext_noop("Overall"), gettext_noop("highest s_I,min(t,1) + s_T,min(t,2)")),
    BEST_ANONYMIZER_REID: (gettext_noop("Best anonymizer (re-identification)"), gettext_noop("highest s_I,min(t,1)")),
    BEST_ANONYMIZER_TRACE: (gettext_noop("Best anonymizer (trace inference)"), gettext_noop("highest s_T,min(t,2)")),
    BEST_ANONYMIZER: (gettext_noop("Best anonymization"), gettext_noop("highest s_T,min(t,2)")),
    BEST_ATTACKER_REID: (gettext_noop("Best attacker (re-identification)"), gettext_noop("lowest attacker sum of s_I")),
    BEST_ATTACKER_TRACE: (gettext_noop("Best attacker (trace inference)"), gettext_noop("lowest attacker sum of s_T")),
}


def award_title(name: str, place: int | None = None) -> tuple[str, str]:
    """(English title, rule) of award ``name``; the overall award's title names its ``place``."""
    title, rule = AWARD_TITLES.get(name, (name.replace("_", " ").capitalize(), ""))
    if name == OVERALL and place is not None:
        title = f"{title}, place {place}"
    return title, rule


def played_rounds(contest: Contest) -> list[int]:
    """Numbers of the rounds played: their anonymization phase closed and their sets pseudonymized."""
    return sorted(set(PublicSet.objects.filter(dataset__round__contest=contest)
                      .values_list("dataset__round__number", flat=True)))


def included_rounds(contest: Contest, through_round: int | None = None) -> list[int]:
    """The rounds a results snapshot covers: those played, up to ``through_round`` (None: all played).

    A round not played yet is left out, never counted as zeros. Before any round
    is played the first round stands in (every value 0, shown as "not played yet").
    """
    played = [n for n in played_rounds(contest) if through_round is None or n <= through_round]
    if played:
        return played
    first = contest.rounds.order_by("number").values_list("number", flat=True).first()
    return [first] if first is not None else []


def standing(contest: Contest, included: list[int]) -> dict:
    """What a snapshot decides: every round with whether it was played and is counted, and whether the
    standings are final (every round of the contest played and counted) or provisional."""
    played = set(played_rounds(contest))
    rounds = [{"number": r.number, "name": r.name, "weight": float(r.weight), "played": r.number in played,
               "included": r.number in included and r.number in played}
              for r in contest.rounds.order_by("number")]
    return {"rounds": rounds, "through_round": max(included) if included else None,
            "final": bool(rounds) and all(r["included"] for r in rounds)}


def score_rows(contest: Contest, rounds: list[int] | None = None):
    """(teams, round_weights, utility rows, attack rows, benchmark team) from the current score rows,
    of the rounds numbered in ``rounds`` (None: every round)."""
    rounds = [r for r in Round.objects.filter(contest=contest) if rounds is None or r.number in rounds]
    numbers = {r.number for r in rounds}
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
        if ds.round.number in numbers:
            utility.append(UtilityRow(SetRef(ds.round.number, ds.number, ds.challenge), float(aset.s_u),
                                      bool(aset.valid), aset.created_at))
    for ds in Dataset.objects.filter(round__contest=contest, round__number__in=numbers, kind=Dataset.BENCHMARK,
                                     public_set__isnull=False).select_related("round"):
        # The benchmark is O itself, pseudonymized only: its utility is 1 by definition.
        utility.append(UtilityRow(SetRef(ds.round.number, ds.number, ds.challenge), 1.0, True, None))
    rows = (Score.objects.filter(dataset__round__contest=contest, dataset__round__number__in=numbers, current=True,
                                 metric__in=tuple(AttackKind)).defer("per_user"))
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


def score_vectors(contest: Contest, rounds: list[int]) -> tuple[dict, list]:
    """The per-user parts of the scores the results count (``scoring.uncertainty``'s input), of ``rounds``:
    SetRef -> utility parts of each final set, and (AttackRow, parts or None) per counted attack row."""
    utility = {}
    for s in Score.objects.filter(dataset__round__contest=contest, dataset__round__number__in=rounds, current=True,
                                  metric=Score.UTILITY, anonymized_set__final=True).select_related("dataset__round"):
        ds = s.dataset
        utility[SetRef(ds.round.number, ds.number, ds.challenge)] = _vectors(s.per_user)
    rows = Score.objects.filter(dataset__round__contest=contest, dataset__round__number__in=rounds, current=True,
                                metric__in=tuple(AttackKind))
    attacks = [(row, _vectors(s.per_user)) for row, s in _counted_attack_scores(contest, rows)]
    return {k: v for k, v in utility.items() if v is not None}, attacks


def uncertainty_for_snapshot(contest: Contest, res, rounds: list[int]) -> dict:
    """Bootstrap intervals, swap probabilities and award stability of ``res`` (over ``rounds``) for the
    snapshot (``scoring.uncertainty.results_uncertainty``, seeded by the contest); a failure is recorded."""
    try:
        utility, attacks = score_vectors(contest, rounds)
        return results_uncertainty(res, utility, attacks, seed=derived_seed(contest.seed, "bootstrap"))
    except Exception as exc:  # noqa: BLE001 - the snapshot must still be stored
        log.exception("uncertainty of %s failed", contest.slug)
        return {"error": f"{type(exc).__name__}: {exc}"}


def compute(contest: Contest, rounds: list[int] | None = None):
    """The contest's :class:`scoring.results.Results` from its current score rows (of ``rounds``;
    None: the rounds played so far, :func:`included_rounds`)."""
    teams, weights, utility, attacks, bench = score_rows(
        contest, included_rounds(contest) if rounds is None else rounds)
    return compute_results(teams=teams, round_weights=weights, utility=utility, attacks=attacks,
                           benchmark_team=bench, variant=contest.award_variant, tie_break=contest.tie_break)


#: The shape of a snapshot's ``data``, its ``"version"`` key: ``contest.services.results_snapshot`` holds the
#: schema, its builder and its reader. Snapshots of an older shape (no ``"version"``: before leaderboards or
#: standing were kept) were brought to version 2 by the data migration ``snapshot_schema_version`` through
#: :func:`upgraded_snapshot_data`, which stays for that migration.
SNAPSHOT_VERSION = results_snapshot.VERSION


def upgraded_snapshot_data(data: dict, round_names: dict[int, str]) -> dict:
    """``data`` of a snapshot stored before :data:`SNAPSHOT_VERSION`, in the current shape (a new dict).

    Only what is missing is added, from the snapshot's own numbers: the leaderboards
    (``scoring.results.leaderboards_of``, the same ranking rule), the standing (every round of its
    weights played and counted, final, as the pages read a snapshot without one before) and the
    correlation. ``round_names``: round number -> name, for the standing. The snapshot's ``sha256``
    stays the digest of what its job computed.
    """
    data = dict(data)
    if "leaderboards" not in data:
        data["leaderboards"] = leaderboards_of(data)
    if "standing" not in data:
        weights = [(int(r["round"]), float(r["weight"])) for r in data.get("round_weights", [])]
        data["standing"] = {
            "rounds": [{"number": n, "name": round_names.get(n, f"Round {n}"), "weight": w, "played": True,
                        "included": True} for n, w in weights],
            "through_round": max((n for n, _w in weights), default=None), "final": True}
    if "correlation" not in data:
        data["correlation"] = set_correlations(data.get("sets", []))
    data["version"] = SNAPSHOT_VERSION
    return data


def set_correlations(sets: list[dict]) -> dict[str, dict]:
    """Paper Fig. 9's R per round: the Pearson correlation of s_I,min and s_T,min over the round's valid
    team sets (the benchmark excluded), as ``{"<round number>": {"r": R, "n_sets": n}}`` for the
    snapshot's ``sets`` (``Results.to_dict()``); R is None for fewer than two sets or a constant score.

    Stored in the snapshot (``data["correlation"]``) by the results job, so the plots page reads it."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for s in sets:
        if s["valid"] and not s.get("benchmark"):
            pairs.setdefault(str(s["set"]["round"]), []).append((s["s_i_min"], s["s_t_min"]))
    out = {}
    for number, xy in pairs.items():
        r = correlation([x for x, _ in xy], [y for _, y in xy])
        out[number] = {"r": None if math.isnan(r) else r, "n_sets": len(xy)}
    return out


def snapshot(contest: Contest, *, user=None, through_round: int | None = None,
             recompute: bool = False) -> ResultsSnapshot:
    """Compute and store the results and their awards (unpublished), over the rounds played up to
    ``through_round`` (None: every round played so far); ``standing`` says which and whether final.

    The figures of single sets and rounds (rules §13 analyses, fairness, Fig. 8) are combined from what
    their jobs stored; ``recompute`` computes every one of them again here instead (the same snapshot,
    slower: ``tests/contest/test_results_combine.py``)."""
    rounds = included_rounds(contest, through_round)
    res = compute(contest, rounds)
    built = results_snapshot.build(
        res, contest=contest.slug, team_names={t.number: t.name for t in contest.teams.all()},
        round_names={r.number: r.name for r in contest.rounds.all()}, standing=standing(contest, rounds),
        correlation=set_correlations(res.to_dict()["sets"]),  # paper Fig. 9's R, read by the plots page
        analyses=analyses.for_snapshot(contest, recompute=recompute),  # rules §13 utility and fairness
        sample_anonymizers=round_figures.sample_anonymizers_for_snapshot(contest, recompute=recompute),  # Fig. 8
        uncertainty=uncertainty_for_snapshot(contest, res, rounds))  # the intervals of scoring.uncertainty
    payload = results_snapshot.to_json(built)
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


@jobs.handles(job_kinds.COMPUTE_RESULTS)
def compute_results_job(job, contest_id: int, publish: bool = False, through_round: int | None = None) -> str:
    contest = Contest.objects.get(pk=contest_id)
    if publish:
        snap = publish_results(contest, user=job.created_by, through_round=through_round)
    else:
        snap = snapshot(contest, user=job.created_by, through_round=through_round)
    standing_ = snap.data["standing"]
    state = f"{'final' if standing_['final'] else 'provisional'} ({'published' if snap.published else 'embargoed'})"
    return say(f"results snapshot %(snapshot)s through round %(round)s, {state}", snapshot=snap.pk,
               round=standing_["through_round"])


class PublishError(ServiceError, ValueError):
    """Results that cannot be published as asked; the message says why."""

    code = "not_publishable"
    status = 409


def publishable_rounds(contest: Contest, numbers: list[int]) -> tuple[list[int], str]:
    """Which of the rounds ``numbers`` the results may be published through now (those
    :func:`check_publishable` accepts) and, when none, why (the last refusal, in the active language; ""
    when some are): the console offers only these, so its confirmation never precedes a refusal."""
    publishable, reason = [], gettext("no round has been played yet: close an anonymization phase first")
    for number in numbers:
        try:
            check_publishable(contest, number)
        except PublishError as exc:
            reason = str(exc)
        else:
            publishable.append(number)
    return publishable, "" if publishable else reason


def check_publishable(contest: Contest, through_round: int | None) -> None:
    """Refuse publishing through a round that is not played (its sets are not pseudonymized yet) or
    whose attack phase has not closed (its team attacks are not all in: every attacker sum would
    read as if nobody attacked, and the standings would be called final)."""
    played = played_rounds(contest)
    names = dict(contest.rounds.values_list("number", "name"))
    if through_round is not None and through_round not in played:
        if through_round not in names:
            raise PublishError(gettext("the contest has no round %(n)s") % {"n": through_round})
        raise PublishError(gettext("%(round)s has not been played yet (its anonymization phase is not closed)") % {
                "round": names[through_round]})
    if not played:
        raise PublishError(gettext("no round has been played yet: close an anonymization phase first"))
    # within the grace after its deadline the phase is still open to attacks begun in time (rules §15)
    due = timezone.now() - deadline_grace()
    for phase in (Phase.objects.filter(round__contest=contest, kind=Phase.ATTACK, closed_at__isnull=True,
                                       closes_at__gt=due, round__number__in=included_rounds(contest, through_round))
                  .select_related("round__contest").order_by("round__number")):
        earlier = [n for n in played if n < phase.round.number]
        hint = (gettext("close it first, or publish through %(round)s (round %(n)s) only") % {
                    "round": names[earlier[-1]], "n": earlier[-1]} if earlier else gettext("close it first"))
        raise PublishError(gettext("the attack phase of %(round)s has not closed (it closes %(closes)s): its "
                                   "attacks are not all counted yet; %(hint)s") % {
            "round": phase.round.name, "closes": contest.local_text(phase.closes_at + deadline_grace()), "hint": hint})


def publish_results(contest: Contest, *, user=None, through_round: int | None = None) -> ResultsSnapshot:
    """Snapshot the results of the rounds played up to ``through_round`` and publish them (ends their
    embargo). The standings are provisional until the last round is published, final after."""
    snap = snapshot(contest, user=user, through_round=through_round)
    standing_ = results_snapshot.read(snap.data).standing
    included = [r.number for r in standing_.rounds if r.included]
    now = timezone.now()
    with transaction.atomic():
        ResultsSnapshot.objects.filter(pk=snap.pk).update(published=True, published_at=now)
        Contest.objects.filter(pk=contest.pk).update(results_published_at=now)
        Round.objects.filter(contest=contest, number__in=included, results_published_at__isnull=True).update(
            results_published_at=now)
        audit.record("publish_results", contest=contest, actor=user, obj=snap, sha256=snap.sha256,
                     rounds=included, final=standing_.final)
    snap.refresh_from_db()
    contest.results_published_at = now
    return snap


def request_results(contest: Contest, *, user=None, publish: bool = False, through_round: int | None = None):
    """Queue computing the results snapshot from the score rows (and publishing it); returns the job.

    Publishing is checked here, so a refusal (:class:`PublishError`) reaches the organizer at once.
    """
    if publish:
        check_publishable(contest, through_round)
    args = {"contest_id": contest.pk}
    if publish:
        args["publish"] = True
    if through_round is not None:
        args["through_round"] = int(through_round)
    with transaction.atomic():
        return jobs.create_job(job_kinds.COMPUTE_RESULTS, contest=contest, user=user, **args)


def request_rescore(contest: Contest, *, user=None):
    """Queue re-scoring every upload and judge attack of the contest; returns the job."""
    with transaction.atomic():
        return jobs.create_job(job_kinds.RESCORE, contest=contest, user=user, contest_id=contest.pk)


def unpublish_results(contest: Contest, *, user=None) -> int:
    """Embargo the results again (the snapshots are kept); returns how many were published."""
    with transaction.atomic():
        n = ResultsSnapshot.objects.filter(contest=contest, published=True).update(published=False)
        Contest.objects.filter(pk=contest.pk).update(results_published_at=None)
        Round.objects.filter(contest=contest).update(results_published_at=None)
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
            jobs.create_job(job_kinds.SCORE_ANONYMIZED, contest=contest, user=actor, anonymized_set_id=pk, force=True)
        for pk in attacks:
            jobs.create_job(job_kinds.SCORE_ATTACK, contest=contest, user=actor, attack_id=pk, force=True)
        for pk in public_sets:
            jobs.create_job(job_kinds.JUDGE_ATTACKS, contest=contest, user=actor, public_set_id=pk)
    return {"anonymized_sets": len(asets), "attacks": len(attacks), "judge_attacks": len(public_sets)}


@jobs.handles(job_kinds.RESCORE)
def rescore_job(job, contest_id: int) -> str:
    counts = rescore(Contest.objects.get(pk=contest_id), job=job)
    return say("queued re-scoring: %(anonymized_sets)s anonymized sets, %(attacks)s attacks, "
               "%(judge_attacks)s judge attacks", **counts)
