"""Reads (HackSoft style): what a user sees, filtered through ``contest.permissions``."""
from __future__ import annotations

import heapq

from django.db.models import QuerySet

from contest import job_kinds, permissions
from contest.models import AnonymizedSet, Attack, Contest, Dataset, Job, PublicSet, ResultsSnapshot, Score, Team
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
    rows = list(jobs.fair_order(queue).values_list("pk", "kind", "team_id", "served", "created_at"))
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
