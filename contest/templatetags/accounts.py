"""How a user is named on the pages: an account deleted by its owner is "deleted user", in the page's
language (``contest.services.accounts``), wherever a member, an uploader or an actor is shown."""
from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

from contest.services.accounts import DELETED_NAME, is_deleted

register = template.Library()


@register.filter
def member_name(user) -> str:
    """``user``'s username, or "deleted user" for a deleted account."""
    if user is None:
        return ""
    return _(DELETED_NAME) if is_deleted(user) else user.get_username()
