"""A job's row as the console, the System page and a job's own page show it, in the page's language: its
message (stored in English by a worker, ``contest.services.job_messages``), its arguments and an audit
entry's object by name (``contest.web.naming``)."""
from __future__ import annotations

from django import template

from contest.services.audit import action_label
from contest.services.job_messages import shown
from contest.web import naming

register = template.Library()


@register.filter
def job_message(message: str) -> str:
    """A job row's ``message`` in the page language (as stored when it was made from no known template)."""
    return shown(message or "")


@register.simple_tag
def job_arguments(contest, args) -> list:
    """A job's arguments named for the page (``contest.web.naming.job_arguments``): "Round: Preliminary",
    not ``{'round_id': 3}``."""
    return naming.job_arguments(contest, args)


@register.simple_tag
def audit_object(contest, entry):
    """An audit entry's object named for the page (``contest.web.naming.audit_object``), or None."""
    return naming.audit_object(contest, entry)


@register.filter
def audit_action(action: str) -> str:
    """An audit entry's action in the page language ("final set chosen", not ``select_anonymized``)."""
    return str(action_label(action))
