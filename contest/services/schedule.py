"""The organizer steers the calendar: move or extend a phase, open the attack phase early, close due phases.

Every change is one audited service call shared by the console, the API and
commands, and refuses an impossible order with a message that says why:
a phase that would close before it opens, an anonymization phase that would
still be open when the attack phase opens, reopening an anonymization phase
whose sets are already pseudonymized, moving a phase of a round whose results
are published. Uploads are checked against the phase rows under the phase's
lock (``uploads.lock_phase``), so a new deadline takes effect for the next
upload at once.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from contest.models import Phase, PublicSet, Round
from contest.request_start import deadline_grace
from contest.services import audit, judge, results, uploads
from contest.services.errors import ServiceError


class ScheduleError(ServiceError, ValueError):
    """An impossible calendar change; the message says why, in the active language (the request's: the
    console and the API show it as it is)."""

    code = "schedule_conflict"
    status = 409


def local_time(phase: Phase, dt: datetime) -> str:
    """``dt`` in the contest's time zone as the organizer reads it (``2019-11-20 17:00 JST``)."""
    return phase.round.contest.local_text(dt)


def phase_kind(phase: Phase) -> str:
    """The phase's name as a refusal reads it ("anonymization phase", "attack phase"), in the active language."""
    return Phase.kind_name(phase.kind)


def _locked_phases(round_: Round) -> dict[str, Phase]:
    return {p.kind: p for p in Phase.objects.select_for_update().filter(round=round_).select_related("round__contest")}


def reschedule_phase(phase: Phase, *, opens_at: datetime | None = None, closes_at: datetime | None = None,
                     user=None, now: datetime | None = None) -> Phase:
    """Move ``phase``'s opening and/or deadline (extend it, shorten it, reopen a closed attack phase).

    Refuses (:class:`ScheduleError`): a close not after the opening; a deadline
    already past for a phase still to be closed (use "close now"); any change to
    an anonymization phase that is closed or being closed (its sets are
    frozen and pseudonymized); an anonymization phase that would close after
    the attack phase opens, or an attack phase that would open before the
    anonymization phase closes; a change to a round whose results are published
    (the next round stays free to steer).
    """
    now = now or timezone.now()
    with transaction.atomic():
        phases = _locked_phases(phase.round)
        phase = phases[phase.kind]
        round_ = phase.round
        kind = phase_kind(phase)
        new_open, new_close = opens_at or phase.opens_at, closes_at or phase.closes_at
        if new_close <= new_open:
            raise ScheduleError(_("the %(kind)s would close (%(closes)s) before it opens (%(opens)s)") % {
                "kind": kind, "closes": local_time(phase, new_close), "opens": local_time(phase, new_open)})
        if round_.results_published_at is not None:
            raise ScheduleError(_("the results of %(round)s are published; unpublish them before changing its "
                                  "calendar") % {"round": round_.name})
        if phase.kind == Phase.ANONYMIZATION:
            if phase.closed_at is not None or PublicSet.objects.filter(dataset__round=round_).exists():
                raise ScheduleError(_("the anonymization phase of %(round)s is closed and its sets are already "
                                      "pseudonymized; it cannot be reopened or moved") % {"round": round_.name})
            if judge.close_queued(round_.pk):
                raise ScheduleError(_("the anonymization phase of %(round)s is being closed") % {"round": round_.name})
        if new_close <= now and (phase.closed_at is None or new_close != phase.closes_at):
            raise ScheduleError(_("the new deadline %(closes)s is already past; to end the phase now use "
                                  "\"Close now\"") % {"closes": local_time(phase, new_close)})
        anon, attack = phases.get(Phase.ANONYMIZATION), phases.get(Phase.ATTACK)
        if phase.kind == Phase.ANONYMIZATION and attack and attack.closed_at is None and new_close > attack.opens_at:
            raise ScheduleError(_("the attack phase opens at %(opens)s, before the anonymization phase would close "
                                  "(%(closes)s); move the attack phase first") % {
                "opens": local_time(phase, attack.opens_at), "closes": local_time(phase, new_close)})
        if phase.kind == Phase.ATTACK and anon and new_open < anon.closes_at:
            raise ScheduleError(_("the anonymization phase closes at %(closes)s; the attack phase cannot open "
                                  "before that (%(opens)s)") % {
                "closes": local_time(phase, anon.closes_at), "opens": local_time(phase, new_open)})
        before = {"opens_at": phase.opens_at.isoformat(), "closes_at": phase.closes_at.isoformat(),
                  "closed_at": phase.closed_at.isoformat() if phase.closed_at else None}
        reopen = phase.kind == Phase.ATTACK and phase.closed_at is not None and new_close > now
        Phase.objects.filter(pk=phase.pk).update(opens_at=new_open, closes_at=new_close,
                                                 **({"closed_at": None} if reopen else {}))
        audit.record("reschedule_phase", contest=round_.contest, actor=user, obj=phase, round=round_.number,
                     kind=phase.kind, before=before, opens_at=new_open.isoformat(), closes_at=new_close.isoformat(),
                     reopened=reopen)
    phase.refresh_from_db()
    return phase


def can_close_now(phase: Phase, now: datetime) -> bool:
    """Whether an organizer may close ``phase`` now (``judge.close_phase_now``): it has opened and is not
    closed yet (open, or past its deadline before the sweep came); never one that has not opened."""
    return phase.closed_at is None and phase.opens_at <= now


def can_open_now(phase: Phase, anonymization: Phase | None, now: datetime) -> bool:
    """Whether an organizer may open ``phase`` now (:func:`open_attack_now`): an attack phase not yet open
    nor closed, once its round's ``anonymization`` phase is closed."""
    return (phase.kind == Phase.ATTACK and phase.closed_at is None and phase.opens_at > now
            and bool(anonymization and anonymization.closed_at))


def open_attack_now(round_: Round, *, user=None, now: datetime | None = None) -> Phase:
    """Open ``round_``'s attack phase now (its deadline stays), once the anonymization phase is closed.

    Refuses while the anonymization phase is open or still being closed (the
    targets are not pseudonymized yet), and when the attack phase is already
    open or closed.
    """
    now = now or timezone.now()
    with transaction.atomic():
        phases = _locked_phases(round_)
        anon, attack = phases.get(Phase.ANONYMIZATION), phases.get(Phase.ATTACK)
        if attack is None:
            raise ScheduleError(_("%(round)s has no attack phase") % {"round": round_.name})
        if anon is None or anon.closed_at is None or not PublicSet.objects.filter(dataset__round=round_).exists():
            raise ScheduleError(_("the anonymization phase of %(round)s is not closed yet (its sets are not "
                                  "pseudonymized); close it first") % {"round": round_.name})
        if attack.closed_at is not None:
            raise ScheduleError(_("the attack phase of %(round)s is already closed") % {"round": round_.name})
        if attack.opens_at <= now:
            raise ScheduleError(_("the attack phase of %(round)s is already open") % {"round": round_.name})
        Phase.objects.filter(pk=attack.pk).update(opens_at=now)
        audit.record("open_attack_now", contest=round_.contest, actor=user, obj=attack, round=round_.number,
                     planned_opening=attack.opens_at.isoformat())
    attack.refresh_from_db()
    return attack


def close_due_phases(now: datetime | None = None) -> int:
    """The sweep's part: close every phase past its deadline by the grace (returns how many).

    A phase is due ``request_start.deadline_grace()`` after its deadline: an upload whose request began
    before the deadline and whose body the front was still reading is stored before the close (uploads
    are checked at their request's start, rules §15). The organizer's "close now" does not wait.
    An anonymization phase gets the judge's close (freeze, pseudonymize, judge attacks) queued; an attack
    phase is marked closed at its deadline, under the phase's lock (an upload in flight is stored first,
    a later one is refused: ``uploads.lock_phase``), and the results are recomputed (still embargoed until
    published).
    """
    due = (now or timezone.now()) - deadline_grace()
    n = 0
    for phase in Phase.objects.filter(kind=Phase.ANONYMIZATION, closed_at__isnull=True, closes_at__lte=due):
        if not judge.close_queued(phase.round_id):
            with transaction.atomic():
                judge.request_close(phase.round)
            n += 1
    for phase in Phase.objects.filter(kind=Phase.ATTACK, closed_at__isnull=True,
                                      closes_at__lte=due).select_related("round__contest"):
        with transaction.atomic():
            uploads.lock_phase(phase.pk, shared=False)
            if Phase.objects.filter(pk=phase.pk, closed_at__isnull=True).update(closed_at=phase.closes_at):
                audit.record("close_phase", contest=phase.round.contest, obj=phase, round=phase.round.number,
                             kind=phase.kind, by="deadline")
                results.request_results(phase.round.contest)
                n += 1
    return n


def close_time(phase: Phase) -> datetime:
    """When the sweep closes ``phase`` at the earliest (:func:`close_due_phases`): its deadline and the grace."""
    return phase.closes_at + deadline_grace()
