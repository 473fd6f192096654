"""The append-only audit log (uploads, selections, phase changes, re-scores, publications)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from contest.models import AuditLog
from contest.services import site_state

#: What each action recorded in the log is called on the pages (the console's audit list), in the reader's
#: language; the stored action stays the short English name. tests/web/test_audit_labels.py finds every
#: action the code records here.
ACTION_LABELS = {
    "add_round": _("round added"),
    "add_team": _("team added"),
    "announce": _("announcement"),
    "approve_team": _("team approved"),
    "close_phase": _("phase closed"),
    "create_contest": _("contest created"),
    "delete_account": _("account deleted"),
    "enable_second_factor": _("two-factor login enabled"),
    "export_files": _("files exported"),
    "generate_round": _("round's data generated"),
    "give_training_data": _("training data given"),
    "import_contest": _("contest imported"),
    "join_team": _("joined a team"),
    "new_invitation_code": _("new invitation code"),
    "open_attack_now": _("attack phase opened now"),
    "open_contest": _("contest opened to the public"),
    "password_change": _("password changed"),
    "password_reset": _("password reset"),
    "pseudonymize": _("set pseudonymized"),
    "publish_results": _("results published"),
    "remove_member": _("member removed"),
    "rename_team": _("team renamed"),
    "reschedule_phase": _("phase rescheduled"),
    "rescore": _("re-scored"),
    "retry_job": _("job retried"),
    "revoke_token": _("API token revoked"),
    "rotate_token": _("API token replaced"),
    "select_anonymized": _("final set chosen"),
    "snapshot_results": _("results computed"),
    "unpublish_results": _("results withdrawn"),
    "update_account": _("account updated"),
    "upload_anonymized": _("anonymized set uploaded"),
    "upload_attack": _("attack uploaded"),
}


def action_label(action: str) -> str:
    """The page's name of a logged ``action`` (:data:`ACTION_LABELS`), or the action itself if it has none."""
    return ACTION_LABELS.get(action, action)


def record(action: str, *, contest=None, actor=None, obj=None, for_team=None, **details) -> AuditLog:
    """Append one entry; ``obj`` (any model instance) is recorded by type and id. ``for_team``: the team whose
    own action this is (its upload, attack or choice of a final set; a Team or its id), whose pages alone it changes; None
    for any other entry, which changes every page (the organizers', the judge's, a team's membership)."""
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    entry = AuditLog.objects.create(
        contest=contest, actor=actor, team_id=getattr(for_team, "pk", for_team), action=action,
        object_type=type(obj).__name__ if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        details=details)
    site_state.changed(entry.team_id)  # pages show what was done at their next load
    return entry
