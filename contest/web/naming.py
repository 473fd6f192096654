"""Objects named as the organizer knows them, not by their database ids: a job's arguments (``{"round_id": 3}``
reads "Round: Preliminary") and an audit entry's object ("AnonymizedSet 17" reads "Upload #2 of
team001_data01", a link to its page). One place for both, so the console, a job's page and the audit log
say the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from contest.models import (
    IDP,
    Announcement,
    AnonymizedSet,
    Attack,
    Contest,
    Dataset,
    Job,
    Phase,
    PublicSet,
    ResultsSnapshot,
    Round,
    Team,
)
from contest.services import schedule


@dataclass(frozen=True)
class Named:
    """What a page shows for one object: ``label`` (what it is), ``text`` (its name) and a ``url`` or None."""

    label: str
    text: str
    url: str | None = None


def _upload(contest, aset: AnonymizedSet) -> Named:
    return Named(_("Upload"), _("#%(seq)s of %(set)s") % {"seq": aset.seq, "set": aset.dataset.label},
                 reverse("web:upload_detail", args=[contest.slug, aset.pk]))


def _attack(contest, attack: Attack) -> Named:
    return Named(_("Attack"), _("%(kind)s #%(seq)s of %(team)s on %(set)s") % {
        "kind": attack.kind, "seq": attack.seq, "team": attack.attacker.name, "set": attack.target.dataset.label})


def _phase(contest, phase: Phase) -> Named:
    return Named(_("Phase"), f"{phase.round.name}: {schedule.phase_kind(phase)}")


#: model -> (how to fetch it, how to name it)
_NAMERS = {
    Contest: (Contest.objects.all(), lambda c, x: Named(_("Contest"), x.name, reverse("web:contest", args=[x.slug]))),
    Round: (Round.objects.all(), lambda c, r: Named(_("Round"), r.name)),
    Phase: (Phase.objects.select_related("round"), _phase),
    Dataset: (Dataset.objects.all(), lambda c, d: Named(_("Data set"), d.label)),
    AnonymizedSet: (AnonymizedSet.objects.select_related("dataset"), _upload),
    PublicSet: (PublicSet.objects.select_related("dataset"), lambda c, p: Named(_("Public set"), p.dataset.label)),
    Attack: (Attack.objects.select_related("attacker", "target__dataset"), _attack),
    Team: (Team.objects.all(), lambda c, t: Named(_("Team"), f"{t.name} ({t.number})")),
    Announcement: (Announcement.objects.all(), lambda c, a: Named(_("Announcement"), a.title)),
    ResultsSnapshot: (ResultsSnapshot.objects.all(), lambda c, s: Named(_("Results snapshot"), f"#{s.pk}")),
    Job: (Job.objects.all(), lambda c, j: Named(_("Job"), f"#{j.pk} {j.get_kind_display()}",
                                                reverse("web:console_job", args=[c.slug, j.pk]))),
}

#: a job argument naming an object -> the object's model
_ARG_MODELS = {"round_id": Round, "dataset_id": Dataset, "anonymized_set_id": AnonymizedSet,
               "public_set_id": PublicSet, "attack_id": Attack, "announcement_id": Announcement}

#: the other arguments a job may have, as the organizer reads them
_ARG_LABELS = {"team": gettext_lazy("Team"), "challenge": gettext_lazy("Challenge"), "part": gettext_lazy("Part"),
               "bundle": gettext_lazy("Bundle"), "force": gettext_lazy("Again, even if done"),
               "publish": gettext_lazy("Publish"), "through_round": gettext_lazy("Through round"),
               "inputs": gettext_lazy("Contents key")}


def named(contest, model, pk) -> Named | None:
    """Object ``pk`` of ``model`` in ``contest`` named for a page; None if it is gone or of another contest."""
    fetch, name = _NAMERS[model]
    obj = fetch.filter(pk=pk).first() if str(pk).isdigit() else None
    if obj is None or not _in_contest(obj, contest):
        return None
    return name(contest, obj)


def _in_contest(obj, contest) -> bool:
    """Whether ``obj`` belongs to ``contest`` (a page never names another contest's object)."""
    if isinstance(obj, Contest):
        return obj.pk == contest.pk
    for path in ("contest_id", "round.contest_id", "dataset.round.contest_id", "target.dataset.round.contest_id"):
        value = obj
        for part in path.split("."):
            value = getattr(value, part, None)
        if value is not None:
            return value == contest.pk
    return False


def audit_object(contest, entry) -> Named | None:
    """An audit entry's object (``object_type``, ``object_id``) named, else None (shown as recorded)."""
    model = next((m for m in _NAMERS if m.__name__ == entry.object_type), None)
    return named(contest, model, entry.object_id) if model is not None else None


def job_arguments(contest, args: dict) -> list[Named]:
    """A job's arguments named one by one, in their order: objects by name (and link), the rest as values."""
    out = []
    for key, value in (args or {}).items():
        model = _ARG_MODELS.get(key)
        found = named(contest, model, value) if model is not None else None
        if found is not None:
            out.append(found)
        elif key == "challenge" and value in (1, 2):
            out.append(Named(str(_ARG_LABELS[key]), "IDP" if value == IDP else "TRP"))
        elif isinstance(value, bool):
            out.append(Named(str(_ARG_LABELS.get(key, key)), _("yes") if value else _("no")))
        else:
            out.append(Named(str(_ARG_LABELS.get(key, key)), str(value)))
    return out
