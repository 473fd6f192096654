"""Lists stored as one text field, as a page reads them."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def semicolon_list(value) -> str:
    """``"I2-VisitProb;I3-HomeProb"`` (a CSV field's list, ``;``-separated with no space) as a page writes a
    list: ``"I2-VisitProb; I3-HomeProb"``."""
    return "; ".join(part.strip() for part in str(value or "").split(";") if part.strip())
