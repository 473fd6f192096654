"""Anonymized-set and attack uploads: the rules, validation and scoring (rules §5, 7, 8).

Rules enforced at upload time, race-free:

- the phase window, by server time (anonymization phase for anonymized sets,
  attack phase for attacks) when the request began (``started_at``: the front's
  statement, ``contest.request_start``), so an upload begun before the deadline
  is accepted if it is stored before the phase's close, which the sweep runs a
  grace after the deadline (rules §15);
- at most ``Contest.anonymized_upload_limit`` accepted anonymized sets per
  (team, challenge, round), and at most ``etable_limit`` etables and
  ``etraces_limit`` etraces per (attacker, target set). The count and the
  insert happen in one transaction holding a row lock on the dataset (resp.
  the target public set): ``SELECT ... FOR UPDATE`` on PostgreSQL, and on
  SQLite the write lock taken at ``BEGIN IMMEDIATE``. Concurrent uploads thus
  queue on the lock and the limit can never be exceeded;
- no attacks on a team's own sets, on invalid sets (they get no public set),
  or on sample sets.

Decision (the rules are silent): an upload *rejected* for format errors does not count
towards the limits (it is kept with its errors but is no submission), while a
pending, valid or below-``s_req`` upload does.
"""
from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext

from contest import job_kinds, permissions
from contest.models import AnonymizedSet, Attack, Dataset, Job, Phase, PrivacyPreview, PublicSet, Score, Team
from contest.services import audit, data, figures, jobs, rows, storage
from contest.services.errors import ServiceError
from contest.services.job_messages import say
from contest.upload_rule import contest_upload_limit, too_large_message
from scoring.errors import ValidationError
from scoring.io import check_source
from scoring.scores import utility_per_event
from scoring.uncertainty import per_user_utility
from scoring.vocabulary import AttackKind, ScoreKind

log = logging.getLogger(__name__)
T = TypeVar("T")


#: The API's error code of a refused upload or selection, by its HTTP status.
_RULE_CODES = {403: "forbidden", 413: "too_large", 429: "limit_reached", 400: "bad_request",
               503: "database_unavailable"}


class RuleViolation(ServiceError):
    """An upload or selection the contest rules forbid. ``status`` is the HTTP status to answer with,
    and the API's ``code`` follows from it."""

    status = 409

    def __init__(self, message: str, *, status: int | None = None, issues=None):
        super().__init__(message, issues=issues)
        if status is not None:
            self.status = status

    @property
    def code(self) -> str:
        return _RULE_CODES.get(self.status, "rule_violation")


class NotAllowed(RuleViolation):
    status = 403


class LimitReached(RuleViolation):
    status = 429


def _phase(round_, kind) -> Phase | None:
    return Phase.objects.filter(round=round_, kind=kind).first()


def _require_open(round_, kind, now=None, *, lock: bool = False) -> Phase:
    """The round's ``kind`` phase if it is open at ``now`` (an upload's: when its request began) and not
    closed yet, or RuleViolation saying when it runs.

    With ``lock`` (inside the upload's transaction) the phase is share-locked
    first (:func:`lock_phase`): uploads do not wait for each other, but a close
    of the phase (``judge.close_anonymization`` locks it exclusively) waits for
    the uploads in flight, and every upload after it sees the phase closed. So
    an upload either is checked open and stored before the close, or is refused.
    """
    phase = _phase(round_, kind)
    if phase is not None and lock:
        phase = lock_phase(phase.pk, shared=True)
    now = now or timezone.now()
    what = Phase.kind_name(kind)
    if phase is None:
        raise RuleViolation(gettext("%(round)s has no %(phase)s") % {"round": round_.name, "phase": what})
    contest = round_.contest
    if phase.closed_at is not None and phase.opens_at <= now < phase.closes_at:
        # begun in time (the request's start), but arrived after the close had frozen the phase
        raise RuleViolation(
            gettext("the %(phase)s of %(round)s is not open: it was closed at %(closed)s, before this upload had "
                    "arrived (deadline %(closes)s)") % {
                "phase": what, "round": round_.name, "closed": contest.local_text(phase.closed_at, seconds=True),
                "closes": contest.local_text(phase.closes_at)})
    if not phase.is_open(now):
        raise RuleViolation(
            gettext("the %(phase)s of %(round)s is not open (it runs from %(opens)s to %(closes)s; server time "
                    "is %(now)s)") % {"phase": what, "round": round_.name, "opens": contest.local_text(phase.opens_at),
                                      "closes": contest.local_text(phase.closes_at),
                                      "now": contest.local_text(now, seconds=True)})
    return phase


#: Namespace of the phases' advisory locks (PostgreSQL's two-key form: this, then the phase id).
PHASE_LOCK_NAMESPACE = 20191


def lock_phase(phase_id: int, *, shared: bool) -> Phase:
    """Lock the phase to the end of the transaction: shared (an upload) or exclusive (its close); re-read it.

    PostgreSQL: a transaction-scoped advisory lock, whose queue is fair: once a
    close waits, later uploads wait behind it instead of starving it (share
    row locks would let a stream of uploads hold off the close forever).
    SQLite serializes every write transaction anyway.
    """
    if connection.vendor == "postgresql":
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {fn}(%s, %s)", [PHASE_LOCK_NAMESPACE, phase_id])
    return Phase.objects.get(pk=phase_id)


def _check_size(contest, content, name: str) -> None:
    """Refuse an upload whose CSV exceeds the limit the contest's pages state, before storing anything.

    The archive is decompressed with nothing of it kept (``scoring.io.check_source``); any other
    problem of the archive is stored and rejected with its message by the validation job.
    """
    limit = contest_upload_limit(contest)
    try:
        check_source(content, max_bytes=limit)
    except ValidationError as exc:
        if exc.issues and exc.issues[0].code == "file_too_large":
            raise RuleViolation(f"{name}: {too_large_message(limit)}", status=413) from None


def counts_towards_limit(upload) -> bool:
    """Whether an :class:`AnonymizedSet` or :class:`Attack` counts towards its upload limit (not rejected)."""
    return upload.status != AnonymizedSet.REJECTED  # the same status name on both models


def final_of(sets) -> AnonymizedSet | None:
    """The set of one data set that counts as final now, from all its uploads (any order): the frozen final
    one, else the team's choice if scored, else the latest valid upload, else the latest scored one (rules §8.3).

    The one rule of the dashboard, an upload's own page and the close (``judge.final_choice``). Decision
    (the rules are silent): a team with scored uploads but none valid has its latest one frozen as final, so the
    results show its s_U (it scores 0 as an invalid set either way). Rejected uploads are never final.
    """
    newest_first = sorted(sets, key=lambda s: -s.seq)
    frozen = next((s for s in newest_first if s.final), None)
    scored = [s for s in newest_first if s.status in (AnonymizedSet.VALID, AnonymizedSet.INVALID)]
    return (frozen or next((s for s in scored if s.selected), None)
            or next((s for s in scored if s.status == AnonymizedSet.VALID), None) or next(iter(scored), None))


def counted_anonymized_sets(dataset: Dataset) -> int:
    """How many of ``dataset``'s anonymized-set uploads count towards the upload limit."""
    return AnonymizedSet.objects.filter(dataset=dataset).exclude(status=AnonymizedSet.REJECTED).count()


def counted_attacks(attacker: Team, target: PublicSet, kind: str) -> int:
    """How many of ``attacker``'s ``kind`` uploads against ``target`` count towards the 2-per-target limit."""
    return Attack.objects.filter(attacker=attacker, target=target, kind=kind).exclude(status=Attack.REJECTED).count()


def request_key(user, client_key: str | None = None) -> str:
    """The key that marks one upload request's row (``request_key``, unique), so that storing it twice
    finds the first row instead of making a second upload.

    The client's ``Idempotency-Key``, when it sends one, is kept per user (another user's key never finds
    this user's upload) and holds across the client's own retries; otherwise a key of its own for this
    request, which holds across the server's retry of it (:func:`retry_once_if_connection_dropped`).
    """
    own = (client_key or "").strip()[:64] or f"request-{uuid.uuid4().hex}"
    return f"{getattr(user, 'pk', None)}:{own}"


def retry_once_if_connection_dropped(store: Callable[[], T], committed: Callable[[], T | None] = lambda: None) -> T:
    """``store()`` (one whole transaction storing an upload), run again once on a fresh connection if the
    database dropped the connection under it (a restart, a failover, ``pg_terminate_backend``).

    ``committed()`` looks the request's upload up by its key (:func:`request_key`) before each try: a
    failure can come after the commit (the commit's own answer lost with the connection), and then the
    row is there and is the answer; the unique key keeps a second row out even if the look-up missed it.
    A failed transaction was rolled back whole, so a second try stores the upload once or not at all; a
    second failure is a :class:`RuleViolation` with status 503 saying the upload was not stored (never a
    silent loss, and the look-up on a new connection has found no row of it).
    (Django's ``is_usable()`` still answered True for the dropped connection here, so it cannot tell
    a drop from another error: any database error is retried once.)
    Inside a caller's transaction (a test, a command) nothing is retried: that transaction is lost anyway.
    """
    if transaction.get_connection().in_atomic_block:
        return committed() or store()
    for attempt in (1, 2):
        try:
            return committed() or store()
        except IntegrityError:
            found = committed()  # the key's row came in between (the client sent the request twice at once)
            if found is None:
                raise
            return found
        except (OperationalError, InterfaceError) as exc:
            connection.close()
            if attempt == 1:
                log.warning("the database failed under an upload (%s); storing it again once on a new "
                            "connection", exc)
                continue
            try:
                found = committed()
            except (OperationalError, InterfaceError):
                connection.close()
                found = None
            if found is not None:
                return found
            raise RuleViolation(gettext("the database could not be reached; the upload was not stored: send it "
                                        "again in a minute"), status=503) from exc
    raise AssertionError("unreachable")


def _by_key(model, key: str):
    """A look-up of the request's upload by its key, for :func:`retry_once_if_connection_dropped`."""
    return lambda: model.objects.filter(request_key=key).first()


# ----- anonymized sets -------------------------------------------------------------
def submit_anonymized_set(*, user, dataset: Dataset, content, name: str, now=None,
                          key: str | None = None, started_at=None) -> AnonymizedSet:
    """Store an anotraces upload (``content``: bytes or a binary file) and queue its validation and utility scoring.

    ``key``: the client's idempotency key; a request sent again with it answers with the upload it stored.
    ``started_at``: when the request began (``contest.request_start.started_at``), the time the phase is
    checked at and the row's ``created_at``; default ``now`` (default the current time)."""
    decision = permissions.can_upload_anonymized(user, dataset)
    if not decision:
        raise NotAllowed(decision.reason)
    contest = dataset.round.contest
    _require_open(dataset.round, Phase.ANONYMIZATION, started_at or now)  # early answer; again under the lock
    _check_size(contest, content, name)
    key = request_key(user, key)
    return retry_once_if_connection_dropped(
        lambda: _store_anonymized_set(user, dataset, content, name, started_at or now, key),
        _by_key(AnonymizedSet, key))


def _store_anonymized_set(user, dataset: Dataset, content, name: str, now, key: str | None = None) -> AnonymizedSet:
    """One transaction of :func:`submit_anonymized_set`: the limit, the stored file, the row, the job."""
    contest = dataset.round.contest
    with transaction.atomic():
        Dataset.objects.select_for_update().get(pk=dataset.pk)  # serializes this dataset's uploads (the limit)
        checked_at = now or timezone.now()
        _require_open(dataset.round, Phase.ANONYMIZATION, checked_at, lock=True)
        if counted_anonymized_sets(dataset) >= contest.anonymized_upload_limit:
            raise LimitReached(f"the limit of {contest.anonymized_upload_limit} anonymized sets for "
                               f"{dataset.label} in {dataset.round.name} is reached")
        seq = (AnonymizedSet.objects.filter(dataset=dataset).aggregate(n=Max("seq"))["n"] or 0) + 1
        stored = storage.store_upload(content, name, user=user)
        aset = AnonymizedSet.objects.create(dataset=dataset, team=dataset.team, seq=seq, file=stored,
                                            uploaded_by=user, created_at=checked_at, request_key=key)
        audit.record("upload_anonymized", contest=contest, actor=user, obj=aset, for_team=dataset.team,
                     dataset=dataset.label, round=dataset.round.number, seq=seq, sha256=stored.sha256)
        jobs.create_job(job_kinds.SCORE_ANONYMIZED, contest=contest, user=user, for_team=dataset.team, anonymized_set_id=aset.pk)
    return aset


def score_anonymized_set(aset: AnonymizedSet, *, force: bool = False) -> AnonymizedSet:
    """Validate the upload against its original traces and compute s_U (idempotent).

    A format error stores the validator's issues and status ``rejected``; a
    readable set gets a utility score row and status ``valid`` / ``invalid``
    (s_U below s_req). Unless ``force``, the outcome is stored only while the set is
    still pending (:func:`_still_to_score`): the close's inline pass and the worker's job
    may score one set at once, and the later keeps the earlier's outcome.
    """
    aset = AnonymizedSet.objects.select_related("dataset__round__contest", "file", "dataset__original").get(pk=aset.pk)
    if aset.status != AnonymizedSet.PENDING and not force:
        return aset
    dataset = aset.dataset
    contest = dataset.round.contest
    grid = contest.grid()
    truth = data.traces(dataset.original, grid)
    try:
        # the CSV text is dropped as soon as it is parsed (it would sit beside the analyses' peak)
        anon = data.anotraces(storage.read_csv_bytes(aset.file, contest.upload_size_limit), grid, truth)
    except ValidationError as exc:
        issues, total = data.validation_issues(exc)
        with transaction.atomic():
            if _still_to_score(AnonymizedSet, [aset.pk], force):
                return _set_rejected(aset, issues, total)
        aset.refresh_from_db()
        return aset
    per_event = utility_per_event(grid, truth, anon, convention=contest.utility_convention, lambda_u=contest.lambda_u)
    s_u = float(per_event.mean())  # scoring.scores.utility: the mean over the m*L events

    valid = s_u >= contest.s_req
    with transaction.atomic():
        if not _still_to_score(AnonymizedSet, [aset.pk], force):
            aset.refresh_from_db()
            return aset
        # The map page's figures, while the files are parsed anyway (the page never parses them).
        figures.store_dataset_population(dataset, truth)
        figures.store_set_population(aset, anon)
        Score.objects.filter(anonymized_set=aset, metric=Score.UTILITY, current=True).update(current=False)
        Score.objects.create(dataset=dataset, metric=Score.UTILITY, value=s_u, anonymized_set=aset,
                             per_user=data.per_user_json(per_user_utility(per_event)))
        AnonymizedSet.objects.filter(pk=aset.pk).update(
            status=AnonymizedSet.VALID if valid else AnonymizedSet.INVALID, s_u=s_u, valid=valid,
            errors=[], error_total=0, scored_at=timezone.now())
    aset.refresh_from_db()
    return aset


def _still_to_score(model, pks: list[int], force: bool) -> set[int]:
    """Lock the rows ``pks`` of ``model`` (AnonymizedSet or Attack) to the end of the caller's transaction;
    the ids whose outcome this run stores: with ``force`` all, else those still pending, so two runs scoring
    one upload at once (the close's inline pass and the worker's job) never both store it."""
    locked = model.objects.select_for_update().filter(pk__in=pks)
    return set((locked if force else locked.filter(status=model.PENDING)).values_list("pk", flat=True))


def _rejected(upload, issues, total, **cleared):
    """An upload (anonymized set or attack) the validator refused: status ``rejected`` with its ``issues``,
    what a score would have set ``cleared``, scored now."""
    model = type(upload)
    model.objects.filter(pk=upload.pk).update(status=model.REJECTED, errors=issues, error_total=total,
                                              scored_at=timezone.now(), **cleared)
    upload.refresh_from_db()
    return upload


def _set_rejected(aset, issues, total):
    return _rejected(aset, issues, total, valid=None, s_u=None, selected=False)


def _scoring_done(job, upload, name: str) -> str | None:
    """A scoring job's last progress line (``name #seq: status``); its result when the upload was rejected."""
    jobs.progress(job, 1.0, say(f"{name} #%(seq)s: %(status)s", seq=upload.seq, status=upload.status))
    return say("rejected: %(n)s problem(s)", n=upload.error_total) if upload.status == type(upload).REJECTED else None


@jobs.handles(job_kinds.SCORE_ANONYMIZED)
def score_anonymized_job(job, anonymized_set_id: int, force: bool = False) -> str:
    aset = score_anonymized_set(AnonymizedSet(pk=anonymized_set_id), force=force)
    rejected = _scoring_done(job, aset, "anonymized set")
    if rejected:
        return rejected
    if aset.status == AnonymizedSet.VALID and not force:
        queue_preview(aset, user=job.created_by if job else None)
    return say(f"s_U = %(s_u)s ({aset.status})", s_u=f"{aset.s_u:.4f}")


def queue_preview(aset: AnonymizedSet, *, user=None):
    """Queue the privacy preview of the valid ``aset`` (contest.services.previews; last in the judge's queue).

    The team's previews of older uploads to the same data set that are still queued are superseded: marked
    done without running (the card says so), since the team looks at its newest upload and a burst of
    uploads would otherwise queue minutes of previews nobody reads. The final set's is never superseded
    (:func:`final_of`: the team's choice, else the latest valid upload, which ``aset`` is): the final set
    always gets its preview.
    """
    final = final_of(AnonymizedSet.objects.filter(dataset=aset.dataset_id))
    older = AnonymizedSet.objects.filter(dataset=aset.dataset_id, seq__lt=aset.seq)
    if final is not None:
        older = older.exclude(pk=final.pk)
    with transaction.atomic():
        Job.objects.filter(kind=job_kinds.PRIVACY_PREVIEW, status=Job.QUEUED,
                           args__anonymized_set_id__in=list(older.values_list("pk", flat=True))).update(
            status=Job.SUCCEEDED, finished_at=timezone.now(),
            message=say("superseded by upload #%(seq)s: the preview of the newer upload replaces it", seq=aset.seq))
        return jobs.create_job(job_kinds.PRIVACY_PREVIEW, contest=aset.dataset.round.contest, user=user, for_team=aset.team,
                               anonymized_set_id=aset.pk, round_id=aset.dataset.round_id)


def select_anonymized_set(*, user, aset: AnonymizedSet, now=None) -> AnonymizedSet:
    """Make ``aset`` the team's final choice for its dataset (during the anonymization phase)."""
    decision = permissions.can_upload_anonymized(user, aset.dataset)
    if not decision:
        raise NotAllowed(decision.reason)
    _require_open(aset.dataset.round, Phase.ANONYMIZATION, now)
    if aset.status == AnonymizedSet.REJECTED:
        raise RuleViolation(gettext("a rejected upload cannot be selected"))
    with transaction.atomic():
        Dataset.objects.select_for_update().get(pk=aset.dataset_id)
        AnonymizedSet.objects.filter(dataset=aset.dataset_id).exclude(pk=aset.pk).update(selected=False)
        AnonymizedSet.objects.filter(pk=aset.pk).update(selected=True)
        audit.record("select_anonymized", contest=aset.dataset.round.contest, actor=user, obj=aset, for_team=aset.team_id,
                     dataset=aset.dataset.label, seq=aset.seq)
        # the final set always gets its preview, also one chosen after a newer upload superseded it
        if (aset.status == AnonymizedSet.VALID and not PrivacyPreview.objects.filter(anonymized_set=aset).exists()
                and not Job.objects.filter(kind=job_kinds.PRIVACY_PREVIEW, args__anonymized_set_id=aset.pk,
                                           status__in=(Job.QUEUED, Job.RUNNING)).exists()):
            queue_preview(aset, user=user)
    aset.refresh_from_db()
    return aset


# ----- attacks -------------------------------------------------------------------------
def submit_attack(*, user, attacker: Team, target: PublicSet, kind: str, content, name: str,
                  now=None, key: str | None = None, started_at=None) -> Attack:
    """Store an etable/etraces upload against ``target`` and queue its scoring (``key``, ``started_at``: as
    for :func:`submit_anonymized_set`)."""
    if kind not in (Attack.ETABLE, Attack.ETRACES):
        raise RuleViolation(gettext("unknown attack kind %(kind)s; expected etable or etraces") % {"kind": repr(kind)},
                            status=400)
    decision = permissions.can_upload_attack(user, attacker, target)
    if not decision:
        raise NotAllowed(decision.reason)
    round_ = target.dataset.round
    contest = round_.contest
    _require_open(round_, Phase.ATTACK, started_at or now)     # early answer; checked again under the lock
    _check_size(contest, content, name)
    key = request_key(user, key)
    return retry_once_if_connection_dropped(
        lambda: _store_attack(user, attacker, target, kind, content, name, started_at or now, key),
        _by_key(Attack, key))


def _store_attack(user, attacker: Team, target: PublicSet, kind: str, content, name: str, now,
                  key: str | None = None) -> Attack:
    """One transaction of :func:`submit_attack`: the limit, the stored file, the row, the job."""
    round_ = target.dataset.round
    contest = round_.contest
    limit = contest.etable_limit if kind == Attack.ETABLE else contest.etraces_limit
    with transaction.atomic():
        PublicSet.objects.select_for_update().get(pk=target.pk)
        checked_at = now or timezone.now()
        _require_open(round_, Phase.ATTACK, checked_at, lock=True)
        if counted_attacks(attacker, target, kind) >= limit:
            raise LimitReached(f"the limit of {limit} {kind} uploads against {target.dataset.label} is reached")
        seq = (Attack.objects.filter(attacker=attacker, target=target, kind=kind)
               .aggregate(n=Max("seq"))["n"] or 0) + 1
        stored = storage.store_upload(content, name, user=user)
        attack = Attack.objects.create(attacker=attacker, target=target, kind=kind, seq=seq, file=stored,
                                       uploaded_by=user, created_at=checked_at, request_key=key)
        audit.record("upload_attack", contest=contest, actor=user, obj=attack, for_team=attacker, kind=kind,
                     target=target.dataset.label, round=round_.number, seq=seq, sha256=stored.sha256)
        # A queued scoring job of the same target scores this one too when it runs (its run claims the
        # target's queued attacks, contest.services.attack_batches): that job's message carries this one,
        # which is sent when its carrier was (the sweep sends it if it is still queued a stale period later).
        carrier = queued_attack_scoring(target.pk).values("sent_at").first()
        job = jobs.create_job(job_kinds.SCORE_ATTACK, contest=contest, user=user, for_team=attacker,
                              dispatch=carrier is None, attack_id=attack.pk)
        if carrier is not None and carrier["sent_at"] is not None:
            Job.objects.filter(pk=job.pk).update(sent_at=carrier["sent_at"])
    return attack


def queued_attack_scoring(target_id: int):
    """The queued scoring jobs of the pending attacks on target set ``target_id``, oldest first (a forced
    re-score's attack is scored, not pending: never among them)."""
    pending = Attack.objects.filter(target_id=target_id, status=Attack.PENDING).values_list("pk", flat=True)
    return Job.objects.filter(kind=job_kinds.SCORE_ATTACK, status=Job.QUEUED, attempts__lt=settings.TRACECUP_JOB_MAX_ATTEMPTS,
                              args__attack_id__in=list(pending)).order_by("created_at", "id")


def score_attack(attack: Attack, *, force: bool = False, secrets: dict | None = None) -> Attack:
    """Validate an etable/etraces and score it against the secret truth (idempotent: a pending attack is
    stored only while it is still pending, so two runs never both score it; ``force`` scores it again).

    ``secrets``: the target's secrets by attack kind, filled as they are read (:func:`attack_outcome`); a batch
    of attacks on one target passes one dict to all (``contest.services.attack_batches``)."""
    attack = Attack.objects.select_related(*ATTACK_SCORING_RELATED).get(pk=attack.pk)
    if attack.status != Attack.PENDING and not force:
        return attack
    store_attack_outcome(attack, attack_outcome(attack, {} if secrets is None else secrets), force=force)
    attack.refresh_from_db()
    return attack


#: What scoring an attack reads with it (``Attack.objects.select_related``).
ATTACK_SCORING_RELATED = ("target__dataset__round__contest", "target__ptable", "target__dataset__original", "file")


def attacks_to_score(ids) -> dict[int, Attack]:
    """The attacks ``ids`` (id -> attack) with what scoring reads (:data:`ATTACK_SCORING_RELATED`): each with its
    file, and each target set with its data set, round, contest, ID table and original traces read once for
    all its attacks. A batch's attacks share one target: joined to every attack row, the target's rows took
    longer to read than the batch's scoring (the contest's JSON parameters decoded once per attack)."""
    attacks = Attack.objects.select_related("file").in_bulk(ids)
    targets = PublicSet.objects.select_related(*(r.removeprefix("target__") for r in ATTACK_SCORING_RELATED
                                                 if r.startswith("target__"))).in_bulk({a.target_id for a in attacks.values()})
    for attack in attacks.values():
        attack.target = targets[attack.target_id]
    return attacks


def attack_outcome(attack: Attack, secrets: dict) -> dict:
    """What scoring ``attack`` (selected with :data:`ATTACK_SCORING_RELATED`) stores: the attack row's fields,
    and for a readable file its score's per-user parts (``per_user``). The judge's work, no write.

    ``secrets``: attack kind -> the target's secret truth (``data.secret_truth``), read here if missing."""
    target = attack.target
    contest = target.dataset.round.contest
    kind = AttackKind.of_file(attack.kind)
    if kind not in secrets:
        secrets[kind] = data.secret_truth(target, kind)
    secret = secrets[kind]
    try:
        csv = storage.read_csv_bytes(attack.file, contest.upload_size_limit)
        if kind is AttackKind.REIDENTIFICATION:
            estimate = data.etable(csv, len(secret["true_users"]), contest.users_per_set)
        else:
            estimate = data.etraces(csv, contest.grid(), secret["truth"])
    except ValidationError as exc:
        issues, total = data.validation_issues(exc)
        return {"status": Attack.REJECTED, "errors": issues, "error_total": total, "score": None}
    value, parts = data.scored_attack(contest, kind, estimate, secret)
    return {"status": Attack.VALID, "score": value, "errors": [], "error_total": 0,
            "per_user": data.per_user_json(parts)}


def store_attack_outcome(attack: Attack, outcome: dict, *, force: bool = False) -> bool:
    """Store ``outcome`` (:func:`attack_outcome`) on ``attack``: its status, score or errors, and a valid one's
    score row (retiring the attack's current one). Unless ``force``, only while the attack is pending: False
    when another run stored it first (then nothing is written). In the caller's transaction if there is one."""
    return attack.pk in store_attack_outcomes([(attack, outcome)], force=force)


def store_attack_outcomes(outcomes: list[tuple[Attack, dict]], *, force: bool = False) -> set[int]:
    """Store each ``(attack, outcome)`` as :func:`store_attack_outcome` does, in a few queries whatever their
    number (a batch of attack scoring stores its attacks together); returns the ids of the attacks stored.
    Unless ``force``, only the attacks still pending, whose rows stay locked to the end of the transaction
    (the caller's if there is one), so two runs never both store one."""
    if not outcomes:
        return set()
    with transaction.atomic(savepoint=False):
        stored = _still_to_score(Attack, [a.pk for a, _o in outcomes], force)
        now, alike, scores = timezone.now(), {}, []
        for attack, outcome in outcomes:
            if attack.pk not in stored:
                continue
            fields = dict(outcome)
            per_user = fields.pop("per_user", None)
            # one UPDATE per set of equal fields but the score (the valid ones all alike), and one for the
            # scores (rows.update_each: Django's bulk_update cost more than scoring a small attack)
            score = fields.pop("score")
            key = json.dumps(fields, sort_keys=True, default=str)
            alike.setdefault(key, (fields, []))[1].append(Attack(pk=attack.pk, score=score))
            if per_user is not None:
                scores.append(Score(dataset=attack.target.dataset, metric=ScoreKind(AttackKind.of_file(attack.kind)),
                                    value=score, attack_id=attack.pk, per_user=per_user))
        for fields, rows_ in alike.values():
            Attack.objects.filter(pk__in=[a.pk for a in rows_]).update(scored_at=now, **fields)
        rows.update_each(Attack, "score", {a.pk: a.score for _fields, same in alike.values() for a in same})
        if force:  # a pending attack has no score yet: only a re-score retires one
            Score.objects.filter(attack__in=[s.attack_id for s in scores], current=True).update(current=False)
        Score.objects.bulk_create(scores)
    return stored


def attack_scored_message(attack: Attack) -> str:
    """The last line of an attack's scoring job: its score, or how many problems rejected it."""
    if attack.status == Attack.REJECTED:
        return say("rejected: %(n)s problem(s)", n=attack.error_total)
    return say("score = %(score)s", score=f"{attack.score:.4f}")
