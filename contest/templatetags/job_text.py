"""A job's row as the console, the System page and a job's own page show it, in the page's language: its
message (stored in English by a worker, ``contest.services.job_messages``)."""
from __future__ import annotations

from django import template

from contest.services.job_messages import shown

register = template.Library()


@register.filter
def job_message(message: str) -> str:
    """A job row's ``message`` in the page language (as stored when it was made from no known template)."""
    return shown(message or "")
