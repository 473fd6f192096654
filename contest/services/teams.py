"""Teams: adding one, approving it, joining it by invitation code (rules §1), renaming it before its
first upload, a new invitation code, and an organizer removing a member.

Every change is written to the audit log. Errors are :class:`TeamError` with
a participant-readable message; the pages and the REST API show it as is.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.translation import gettext, gettext_noop

from contest.models import AnonymizedSet, Attack, Contest, Dataset, Membership, Team, _invitation_code
from contest.services import audit
from contest.services.errors import ServiceError


class TeamError(ServiceError, ValueError):
    """A team operation the rules refuse (unknown code, second team in a contest, duplicate name)."""

    code = "invalid"


def add_team(contest: Contest, name: str, *, actor=None, approved: bool = True) -> Team:
    """Create team ``name`` with the next team number t of the contest."""
    name = name.strip()
    if not name:
        raise TeamError(gettext("a team needs a name"))
    with transaction.atomic():
        if contest.teams.filter(name=name).exists():
            raise TeamError(gettext("a team named %(name)s exists already") % {"name": name})
        number = next_team_number(contest)
        team = Team.objects.create(contest=contest, number=number, name=name, approved=approved)
        audit.record("add_team", contest=contest, actor=actor, obj=team, number=number, name=name)
    return team


def next_team_number(contest: Contest) -> int:
    """The number t of a new team: past every team's and every generated data set's number.

    A round's benchmark and sample sets are numbered after its teams (tau+1, tau+2, tau+3, rules §4);
    a team added after a round was generated must not take one of those numbers (a team
    numbered like the benchmark made every results job fail).
    """
    used = [contest.teams.aggregate(n=Max("number"))["n"] or 0,
            Dataset.objects.filter(round__contest=contest).aggregate(n=Max("number"))["n"] or 0]
    return max(used) + 1


def approve_team(team: Team, approved: bool = True, *, actor=None) -> Team:
    """Approve a team (or withdraw the approval); only approved teams' members may upload."""
    with transaction.atomic():
        Team.objects.filter(pk=team.pk).update(approved=approved)
        audit.record("approve_team" if approved else "unapprove_team", contest=team.contest, actor=actor, obj=team,
                     number=team.number)
    team.approved = approved
    return team


def team_for_code(code: str) -> Team:
    """The team whose invitation code is ``code`` (surrounding spaces ignored)."""
    team = Team.objects.select_related("contest").filter(invitation_code=code.strip()).first()
    if team is None:
        raise TeamError(gettext("no team has this invitation code; check it for typing mistakes"))
    return team


def join_team(user, code: str) -> tuple[Team, bool]:
    """Make ``user`` a member of the team with invitation code ``code``.

    Returns ``(team, created)``; joining one's own team again changes nothing.
    A user is in at most one team per contest.
    """
    team = team_for_code(code)
    with transaction.atomic():
        if Membership.objects.filter(user=user, team__contest=team.contest).exclude(team=team).exists():
            raise TeamError(gettext("you are already in another team of this contest"))
        try:
            with transaction.atomic():
                _m, created = Membership.objects.get_or_create(user=user, team=team)
        except IntegrityError:  # a concurrent request joined first
            created = False
        if created:
            audit.record("join_team", contest=team.contest, actor=user, obj=team, team=team.number)
    return team, created


def has_uploaded(team: Team) -> bool:
    """Whether the team has made any upload (an anonymized set or an attack, rejected ones included)."""
    return AnonymizedSet.objects.filter(team=team).exists() or Attack.objects.filter(attacker=team).exists()


def rename_team(team: Team, name: str, *, actor=None) -> Team:
    """Give the team a new name; allowed until its first upload (file names, pages and the other teams'
    attack material name it from then on)."""
    name = name.strip()
    if not name:
        raise TeamError(gettext("a team needs a name"))
    with transaction.atomic():
        team = Team.objects.select_for_update().get(pk=team.pk)
        if has_uploaded(team):
            raise TeamError(gettext_noop("a team can be renamed only until its first upload"))
        if name == team.name:
            return team
        if Team.objects.filter(contest_id=team.contest_id, name=name).exists():
            raise TeamError(gettext("a team named %(name)s exists already") % {"name": name})
        old = team.name
        Team.objects.filter(pk=team.pk).update(name=name)
        audit.record("rename_team", contest=team.contest, actor=actor, obj=team, number=team.number, old=old, new=name)
    team.name = name
    return team


def new_invitation_code(team: Team, *, actor=None) -> Team:
    """Replace the team's invitation code: the old one stops working (the code itself is not audited)."""
    with transaction.atomic():
        code = _invitation_code()
        Team.objects.filter(pk=team.pk).update(invitation_code=code)
        audit.record("new_invitation_code", contest=team.contest, actor=actor, obj=team, number=team.number)
    team.invitation_code = code
    return team


def remove_member(team: Team, user, *, actor=None) -> None:
    """Take ``user`` out of ``team`` (an organizer's decision; the team's uploads stay the team's)."""
    with transaction.atomic():
        deleted, _ = Membership.objects.filter(team=team, user=user).delete()
        if not deleted:
            raise TeamError(gettext("%(user)s is not a member of team %(team)s") % {"user": user.get_username(),
                                                                                   "team": team.name})
        audit.record("remove_member", contest=team.contest, actor=actor, obj=team, number=team.number,
                     member=user.get_username())
