"""Reads (HackSoft style): what a user sees, filtered through ``contest.permissions``."""
from __future__ import annotations

import heapq

from django.db.models import Q, QuerySet
from rest_framework.authtoken.models import Token

from contest import job_kinds, permissions
from contest.models import (
    AnonymizedSet,
    Attack,
    AuditLog,
    Contest,
    Dataset,
    Job,
    Membership,
    Phase,
    PrivacyPreview,
    PublicSet,
    ResultsSnapshot,
    Round,
    Score,
    Team,
)
from contest.services import jobs


def contests() -> QuerySet:
    return Contest.objects.prefetch_related("rounds__phases").order_by("-created_at")


def visible_snapshot(user, contest: Contest) -> tuple[ResultsSnapshot | None, bool]:
    """The results ``user`` may see, as the results jobs stored them (pages and API alike): the
    published snapshot, or for organizers the latest one when it is newer (a preview).

    Returns ``(snapshot, is_preview)``.
    """
    published = contest.snapshots.filter(published=True).order_by("-published_at", "-id").first()
    if permissions.is_organizer(user, contest):
        latest = contest.snapshots.order_by("-created_at", "-id").first()
        if latest is not None and (published is None or latest.pk != published.pk):
            return latest, True
    if published is not None and bool(permissions.can_view_results(user, contest)):
        return published, False
    return None, False


def visible_datasets(user, contest: Contest) -> list[tuple[Dataset, bool]]:
    """Datasets whose reference traces ``user`` may read, each with whether the original is readable too."""
    out = []
    for ds in (Dataset.objects.filter(round__contest=contest)
               .select_related("round__contest", "team", "reference", "original")):
        if permissions.can_read_dataset_file(user, ds, "reference"):
            out.append((ds, bool(permissions.can_read_dataset_file(user, ds, "original"))))
    return out


def visible_public_sets(user, contest: Contest) -> list[PublicSet]:
    return [ps for ps in PublicSet.objects.filter(dataset__round__contest=contest)
            .select_related("dataset__round__contest", "pubtraces", "dataset__team")
            if permissions.can_read_public_set(user, ps, "pubtraces")]


def attack_targets(team: Team) -> list[PublicSet]:
    """Public sets ``team`` may attack: every other team's valid set and the benchmark."""
    return list(PublicSet.objects.filter(dataset__round__contest=team.contest)
                .exclude(dataset__team=team).select_related("dataset__round"))


def anonymized_sets_for(user, contest: Contest) -> QuerySet:
    return permissions.readable_anonymized_sets(user, contest, AnonymizedSet.objects.filter(
        dataset__round__contest=contest).select_related("dataset__round", "file"))


def attacks_for(user, contest: Contest) -> QuerySet:
    return permissions.readable_attacks(user, contest, Attack.objects.filter(
        attacker__contest=contest).select_related("attacker", "target__dataset", "file"))


def team_scores(team: Team) -> dict:
    """The scores a team may see before publication: s_U of its uploads and its attacks' scores."""
    return {
        "utility": list(Score.objects.filter(anonymized_set__team=team, metric=Score.UTILITY, current=True)
                        .select_related("dataset")),
        "attacks": list(Score.objects.filter(attack__attacker=team, current=True).select_related("dataset")),
    }


#: How many of a kind's latest runs its measured rate is the mean of.
RECENT_RUNS = 20


def queue_places(queued: list[Job]) -> dict[int, dict]:
    """Where each job of ``queued`` (queued jobs) stands in its queue, and about how long until it is done.

    ``{job id: {"place": n, "wait": seconds or None}}``: n is 1 for the next job a worker claims. The order
    is the workers' claim (``jobs.fair_order``) played forward: best rank first, the teams in turn, each
    team's oldest first. The wait adds the mean run time of the latest :data:`RECENT_RUNS` runs of each
    job's kind (the measured rate) over the jobs ahead, shared by the processes busy on the queue now (at
    least one), plus the job's own; None when no job of those kinds has run yet.
    """
    out: dict[int, dict] = {}
    wanted = {job.pk for job in queued if job.status == Job.QUEUED}
    for queue in sorted({job_kinds.QUEUE_OF[job.kind] for job in queued if job.pk in wanted}):
        order = _played_forward(queue)
        means = _mean_run_seconds(job_kinds.BY_QUEUE[queue])
        busy = max(Job.objects.filter(status=Job.RUNNING, kind__in=job_kinds.BY_QUEUE[queue]).count(), 1)
        ahead, known = 0.0, True
        for place, (pk, kind) in enumerate(order, start=1):
            own = means.get(kind)
            known = known and own is not None
            if pk in wanted:
                out[pk] = {"place": place, "wait": round(ahead / busy + own) if known else None}
            ahead += own or 0.0
    return out


def _played_forward(queue: str) -> list[tuple[int, str]]:
    """(id, kind) of every queued job of ``queue`` in the order the workers will claim them."""
    rows = jobs.fair_order(queue)
    heads: dict = {}
    for pk, kind, team, served, created in sorted(rows, key=lambda r: (job_kinds.rank(r[1]), r[4], r[0])):
        heads.setdefault(team if team is not None else ("judge", pk), []).append((pk, kind, served, created))
    # a heap of each team's next job; a team just served goes behind every other (its served time is now)
    heap = [(job_kinds.rank(q[0][1]), (0, q[0][2]), q[0][3], q[0][0], key) for key, q in heads.items()]
    heapq.heapify(heap)
    order, turn = [], 0
    while heap:
        _rank, _served, _created, _pk, key = heapq.heappop(heap)
        pk, kind, _s, _c = heads[key].pop(0)
        order.append((pk, kind))
        turn += 1
        if heads[key]:
            nxt = heads[key][0]
            heapq.heappush(heap, (job_kinds.rank(nxt[1]), (1, turn), nxt[3], nxt[0], key))
    return order


def _mean_run_seconds(kinds) -> dict[str, float]:
    """The mean run time in seconds of the latest :data:`RECENT_RUNS` successful runs of each of ``kinds``."""
    means = {}
    for kind in kinds:
        runs = (Job.objects.filter(kind=kind, status=Job.SUCCEEDED, started_at__isnull=False,
                                   finished_at__isnull=False).order_by("-finished_at")
                .values_list("started_at", "finished_at")[:RECENT_RUNS])
        spans = [(end - start).total_seconds() for start, end in runs]
        if spans:
            means[kind] = sum(spans) / len(spans)
    return means


# ---------------------------------------------------------------- the organizer's console
def organized_contests(user) -> list[Contest]:
    """The contests ``user`` organizes (``permissions.is_organizer``), newest first."""
    return [c for c in Contest.objects.order_by("-created_at") if permissions.is_organizer(user, c)]


def phases() -> QuerySet:
    """Every phase with its round and contest, to look one up by id (``get_object_or_404``)."""
    return Phase.objects.select_related("round__contest")


def latest_round_job(round_: Round, kind: str) -> Job | None:
    """The newest job of ``kind`` (a ``contest.job_kinds`` constant) about ``round_``, or None."""
    return Job.objects.filter(kind=kind, args__round_id=round_.pk).order_by("-created_at", "-id").first()


def round_counts(round_: Round) -> dict[str, int]:
    """What ``round_`` holds so far: ``n_datasets`` (generated data sets), ``n_uploads`` (anonymized sets),
    ``n_attacks`` (the teams' attack uploads) and ``n_public`` (published public sets)."""
    return {"n_datasets": Dataset.objects.filter(round=round_).count(),
            "n_uploads": AnonymizedSet.objects.filter(dataset__round=round_).count(),
            "n_attacks": Attack.objects.filter(target__dataset__round=round_).count(),
            "n_public": PublicSet.objects.filter(dataset__round=round_).count()}


def recent_audit(contest: Contest, n: int) -> QuerySet:
    """The contest's ``n`` latest audit log entries, newest first."""
    return AuditLog.objects.filter(contest=contest).order_by("-id")[:n]


def jobs_about_team(jobs_: QuerySet, contest: Contest, number: int) -> QuerySet:
    """The jobs of ``jobs_`` about team ``number``'s uploads: its anonymized sets, its attacks, its public sets."""
    def ids(model, **team):
        return list(model.objects.filter(**team).values_list("pk", flat=True))
    return jobs_.filter(
        Q(args__anonymized_set_id__in=ids(AnonymizedSet, dataset__round__contest=contest, team__number=number))
        | Q(args__attack_id__in=ids(Attack, target__dataset__round__contest=contest, attacker__number=number))
        | Q(args__public_set_id__in=ids(PublicSet, dataset__round__contest=contest, dataset__team__number=number)))


def attach_job_teams(rows: list[Job]) -> None:
    """Set ``job.team`` (a Team or None) on each job of ``rows`` from its arguments (the anonymized set's
    team, the attacker, the public set's team), with three queries in all."""
    ids = {key: {j.args.get(key) for j in rows if j.args.get(key)} for key in
           ("anonymized_set_id", "attack_id", "public_set_id")}
    by = {
        "anonymized_set_id": {a.pk: a.team for a in AnonymizedSet.objects.filter(pk__in=ids["anonymized_set_id"])
                              .select_related("team")},
        "attack_id": {a.pk: a.attacker for a in Attack.objects.filter(pk__in=ids["attack_id"]).select_related("attacker")},
        "public_set_id": {p.pk: p.dataset.team for p in PublicSet.objects.filter(pk__in=ids["public_set_id"])
                          .select_related("dataset__team")},
    }
    for job in rows:
        job.team = next((by[key].get(job.args[key]) for key in by if job.args.get(key)), None)


# ---------------------------------------------------------------- a team's pages
#: The scoring job of an upload: (its kind, the job argument that names the upload), by upload model.
SCORING_JOB = {AnonymizedSet: (job_kinds.SCORE_ANONYMIZED, "anonymized_set_id"),
               Attack: (job_kinds.SCORE_ATTACK, "attack_id")}


def latest_jobs_of(kind: str, key: str, ids) -> dict[int, Job]:
    """{object id: the latest job of ``kind`` whose argument ``key`` is that id}, for the ids ``ids``; one query."""
    latest = {}
    if ids:
        for job in Job.objects.filter(kind=kind, **{f"args__{key}__in": list(ids)}).order_by("created_at", "id"):
            latest[job.args.get(key)] = job  # later jobs overwrite earlier ones
    return latest


def latest_scoring_jobs(model, ids) -> dict[int, Job]:
    """{upload id: its latest scoring job} of the uploads ``ids`` of ``model`` (AnonymizedSet or Attack):
    one query, however many uploads."""
    return latest_jobs_of(*SCORING_JOB[model], ids)


def uploads_of(dataset: Dataset) -> list[AnonymizedSet]:
    """Every anonymized set uploaded on ``dataset``, newest first (by upload number)."""
    return list(AnonymizedSet.objects.filter(dataset=dataset).order_by("-seq"))


def scored_uploads_of(dataset: Dataset) -> list[AnonymizedSet]:
    """The anonymized sets of ``dataset`` that were read (neither rejected nor pending), newest first, each
    with its population figure."""
    return list(AnonymizedSet.objects.filter(dataset=dataset)
                .exclude(status__in=(AnonymizedSet.REJECTED, AnonymizedSet.PENDING))
                .select_related("population").order_by("-seq"))


def previews_of(aset_ids) -> dict[int, PrivacyPreview]:
    """{anonymized set id: its privacy preview} of those of ``aset_ids`` that have one."""
    return {p.anonymized_set_id: p for p in PrivacyPreview.objects.filter(anonymized_set_id__in=aset_ids)} \
        if aset_ids else {}


def attacks_on(team: Team, target: PublicSet) -> list[Attack]:
    """``team``'s attack uploads on ``target``, by kind then upload number."""
    return list(Attack.objects.filter(attacker=team, target=target).order_by("kind", "seq"))


def round_attacks(team: Team, round_: Round) -> list[Attack]:
    """``team``'s attack uploads on every target of ``round_``, by kind then upload number."""
    return list(Attack.objects.filter(attacker=team, target__dataset__round=round_).order_by("kind", "seq"))


def own_datasets(team: Team, round_: Round) -> list[Dataset]:
    """``team``'s data sets of ``round_`` (one per challenge), with their files, by challenge."""
    return list(Dataset.objects.filter(round=round_, team=team).select_related("reference", "original")
                .order_by("challenge"))


def sample_datasets(round_: Round) -> list[Dataset]:
    """The sample data sets of ``round_`` (everyone may read them), with their files."""
    return list(Dataset.objects.filter(round=round_, kind=Dataset.SAMPLE).select_related("reference", "original")
                .order_by("number", "challenge"))


def round_public_sets(round_: Round) -> list[PublicSet]:
    """The public sets of ``round_`` (the attack targets), with their data set, team and files, by team number
    then challenge."""
    return list(PublicSet.objects.filter(dataset__round=round_)
                .select_related("dataset__round__contest", "dataset__team", "pubtraces", "dataset__reference")
                .order_by("dataset__number", "dataset__challenge"))


def team_history(team: Team) -> tuple[QuerySet, QuerySet]:
    """(``team``'s anonymized sets, its attack uploads) of every round, in the order the history lists them:
    round, challenge (and target), kind, upload number."""
    asets = (AnonymizedSet.objects.filter(team=team).select_related("dataset__round", "file")
             .order_by("dataset__round__number", "dataset__challenge", "seq"))
    attacks = (Attack.objects.filter(attacker=team).select_related("target__dataset__round", "file")
               .order_by("target__dataset__round__number", "target__dataset__number", "target__dataset__challenge",
                         "kind", "seq"))
    return asets, attacks


def pending_team(contest: Contest, user) -> Team | None:
    """The team of ``contest`` that ``user`` joined and that is not approved yet, or None."""
    return Team.objects.filter(contest=contest, memberships__user=user, approved=False).first()


def datasets() -> QuerySet:
    """Every data set with its round, contest, team and stored files, to look one up (``get_object_or_404``)."""
    return Dataset.objects.select_related("round__contest", "team", "reference", "original", "population")


def public_sets() -> QuerySet:
    """Every public set with its data set, round, contest and team, to look one up."""
    return PublicSet.objects.select_related("dataset__round__contest", "dataset__team")


def anonymized_sets() -> QuerySet:
    """Every anonymized set with its data set, round, contest, team and file, to look one up."""
    return AnonymizedSet.objects.select_related("dataset__round__contest", "team", "file")


def attacks() -> QuerySet:
    """Every attack upload with its attacker, contest, target data set and file, to look one up."""
    return Attack.objects.select_related("attacker__contest", "target__dataset", "file")


def rounds() -> QuerySet:
    """Every round with its contest and the organizer's training data, to look one up."""
    return Round.objects.select_related("contest", "training_data")


def anonymization_phase(round_: Round) -> Phase | None:
    """``round_``'s anonymization phase (with its round and contest), or None."""
    return Phase.objects.filter(round=round_, kind=Phase.ANONYMIZATION).select_related("round__contest").first()


def teams() -> QuerySet:
    """Every team with its contest, to look one up."""
    return Team.objects.select_related("contest")


def preview_of(aset: AnonymizedSet) -> PrivacyPreview | None:
    """The privacy preview of ``aset`` with its per-user table, or None (not valid, or its job has not run)."""
    return PrivacyPreview.objects.select_related("per_user").filter(anonymized_set=aset).first()


# ---------------------------------------------------------------- jobs
def jobs_with_contest() -> QuerySet:
    """Every job with its contest, to look one up."""
    return Job.objects.select_related("contest")


def contest_jobs(contest: Contest, n: int) -> QuerySet:
    """The ``n`` newest jobs of ``contest`` (``Job``'s order: newest first)."""
    return Job.objects.filter(contest=contest)[:n]


def scoring_jobs_of(upload: AnonymizedSet | Attack) -> QuerySet:
    """The scoring jobs of ``upload`` (an anonymized set or an attack), newest first; lazy, so the caller
    decides when the query runs."""
    kind, key = SCORING_JOB[type(upload)]
    return Job.objects.filter(kind=kind, **{f"args__{key}": upload.pk})


# ---------------------------------------------------------------- accounts and teams
def contests_newest_first() -> QuerySet:
    """Every contest, newest first (the home page filters what its reader may see)."""
    return Contest.objects.order_by("-created_at")


def api_token(user):
    """``user``'s API token (``rest_framework``'s Token), or None: the account page makes none itself."""
    return Token.objects.filter(user=user).first()


def memberships_of(user) -> QuerySet:
    """``user``'s team memberships with their team and contest, by contest name."""
    return Membership.objects.filter(user=user).select_related("team__contest").order_by("team__contest__name")


def teams_left_alone(user, memberships) -> list[Team]:
    """The teams of ``memberships`` (``user``'s) that would have no active member left without ``user``."""
    return [m.team for m in memberships if not Membership.objects.filter(team=m.team).exclude(user=user)
            .filter(user__is_active=True).exists()]


def team_members(team: Team) -> QuerySet:
    """``team``'s memberships with their users: the leader first, then by user name."""
    return Membership.objects.filter(team=team).select_related("user").order_by("-role", "user__username")


def team_name_taken(team: Team, name: str) -> bool:
    """Whether another team of ``team``'s contest is called ``name``."""
    return Team.objects.filter(contest=team.contest, name=name).exclude(pk=team.pk).exists()
