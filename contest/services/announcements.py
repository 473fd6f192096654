"""Announcements from the organizers: shown on the contest and team pages, e-mailed to every member.

The e-mail goes out from a job (``email_announcement``), not the request: a
contest has hundreds of members and a mail server can be slow. Django's mail
backend decides where it goes (``EMAIL_URL``; the console backend by default).
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mass_mail
from django.db import transaction
from django.utils.translation import gettext

from contest import job_kinds
from contest.models import Announcement, Contest
from contest.services import audit, jobs
from contest.services.errors import ServiceError
from contest.services.job_messages import say


class AnnouncementError(ServiceError, ValueError):
    """An announcement that cannot be made (empty title or text); the message says why."""

    code = "invalid"


def announce(contest: Contest, *, title: str, body: str, user=None, email: bool = True) -> Announcement:
    """Publish an announcement now (pages show it at once) and queue its e-mail to every member."""
    title, body = (title or "").strip(), (body or "").strip()
    if not title or not body:
        raise AnnouncementError(gettext("an announcement needs a title and a text"))
    if len(title) > 200 or len(body) > 5000:
        raise AnnouncementError(gettext("an announcement's title is at most 200 characters and its text at most "
                                        "5000"))
    with transaction.atomic():
        item = Announcement.objects.create(contest=contest, title=title, body=body,
                                           created_by=user if getattr(user, "is_authenticated", False) else None)
        audit.record("announce", contest=contest, actor=user, obj=item, title=title)
        if email:
            jobs.create_job(job_kinds.EMAIL_ANNOUNCEMENT, contest=contest, user=user, announcement_id=item.pk)
    return item


def member_addresses(contest: Contest) -> set[str]:
    """E-mail addresses of the members of the contest's approved teams."""
    users = get_user_model().objects.filter(memberships__team__contest=contest, memberships__team__approved=True)
    return set(users.exclude(email="").values_list("email", flat=True))


def recipients(contest: Contest) -> list[str]:
    """E-mail addresses of every member of the contest's approved teams and of its organizers."""
    emails = member_addresses(contest) | set(contest.organizers.exclude(email="").values_list("email", flat=True))
    return sorted(emails)


@jobs.handles(job_kinds.EMAIL_ANNOUNCEMENT)
def email_announcement_job(job, announcement_id: int) -> str:
    item = Announcement.objects.select_related("contest").get(pk=announcement_id)
    to = recipients(item.contest)
    subject = f"[{item.contest.name}] {item.title}"
    # one message per recipient: members do not see each other's addresses. A backend answers None
    # (not 0) for an empty list: nobody in the contest gave an address.
    sent = send_mass_mail([(subject, item.body, settings.DEFAULT_FROM_EMAIL, [address]) for address in to]) or 0
    # The pages say "e-mailed to N addresses": the mails the backend says it sent, the organizers' copies
    # included (counting members only read "1 member" where two mails went).
    members = min(sent, len(member_addresses(item.contest) & set(to)))
    Announcement.objects.filter(pk=item.pk).update(emailed_to=sent)
    return say("e-mailed %(sent)s of %(total)s addresses (%(members)s of team members)", sent=sent, total=len(to),
               members=members)


def latest(contest: Contest, n: int = 5) -> list[Announcement]:
    """The ``n`` newest announcements of ``contest`` (pages)."""
    return list(Announcement.objects.filter(contest=contest)[:n])
