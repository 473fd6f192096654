"""The append-only audit log (uploads, selections, phase changes, re-scores, publications)."""
from __future__ import annotations

from contest.models import AuditLog
from contest.services import site_state


def record(action: str, *, contest=None, actor=None, obj=None, **details) -> AuditLog:
    """Append one entry; ``obj`` (any model instance) is recorded by type and id."""
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    entry = AuditLog.objects.create(
        contest=contest, actor=actor, action=action,
        object_type=type(obj).__name__ if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        details=details)
    site_state.changed()  # pages show what was done at their next load
    return entry
