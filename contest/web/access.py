"""The pages' view of who may do what: every decision is the core's ``contest.permissions``.

Only the page frame's question "does this user organize any contest?" (to
show the console link) is answered here, from the same roles the core
defines (a superuser, or a user listed in ``Contest.organizers``).
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied

from contest import permissions
from contest.models import Contest


def is_organizer(user, contest: Contest) -> bool:
    return permissions.is_organizer(user, contest)


def is_any_organizer(user) -> bool:
    if not (user.is_authenticated and user.is_active):
        return False
    return user.is_superuser or Contest.objects.filter(organizers=user).exists()


def team_of(user, contest: Contest):
    return permissions.team_of(user, contest)


def can_see_results(user, contest: Contest) -> bool:
    return bool(permissions.can_view_results(user, contest))


def require(decision) -> None:
    """Raise 403 with the core's reason when ``decision`` denies."""
    if not decision:
        raise PermissionDenied(getattr(decision, "reason", "") or "not allowed")


def require_organizer(user, contest: Contest) -> None:
    require(permissions.can_manage_contest(user, contest))
