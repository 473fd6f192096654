"""Reads (HackSoft style): what a user sees, filtered through ``contest.permissions``."""
from __future__ import annotations

from django.db.models import QuerySet

from contest import permissions
from contest.models import AnonymizedSet, Attack, Contest, Dataset, PublicSet, ResultsSnapshot, Score, Team


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
