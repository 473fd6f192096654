"""Job rows and their dispatch to Celery (DESIGN "Work in the background").

Every background operation is a :class:`~contest.models.Job` of a ``kind``
(declared once in ``contest.job_kinds``, with its queue, rank and label) handled by
one service function ``handler(job, **job.args)``.
Each service registers its handler with the :func:`handles` decorator, so this
module imports no service and the services import it without a circle;
``contest.tasks`` imports the services (the app loads it at start), which fills
the registry in every process. The Celery task ``contest.tasks.run_job`` only
calls :func:`execute`. Handlers are idempotent
(running one twice leaves the same state), so a redelivered message after a
worker crash (``acks_late`` + ``reject_on_worker_lost``) or a re-queue by the
sweep is harmless.
"""
from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections, transaction
from django.db.models import F, Max, Min, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import RedisError

from contest.celery import app as celery_app
from contest.job_kinds import BY_QUEUE, KINDS, QUEUE_OF, rank
from contest.models import Job
from contest.queues import DEFAULT_QUEUE
from contest.services import audit, rows, site_state
from contest.services.errors import ServiceError
from contest.services.job_messages import say

log = logging.getLogger(__name__)

#: The Celery task that runs every job (contest.tasks.run_job), named so this module needn't import it.
RUN_JOB_TASK = "contest.tasks.run_job"

_REGISTRY: dict[str, Callable[..., str | None]] = {}

#: What publishing a message raises when the broker is down or unreachable.
BROKER_ERRORS = (BrokerOperationalError, ConnectionError, OSError)

#: A queued job younger than this is left to the send its transaction queued on commit.
OUTBOX_GRACE = timedelta(seconds=5)

class TransientJobError(ServiceError):
    """A failure worth retrying (database lock, lost connection)."""

    code = "retry_later"
    status = 503


def handles(kind: str):
    """Register the decorated function as the handler of job ``kind`` (one per kind; a constant of
    ``contest.job_kinds``, where the kind is declared)."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; declare it in contest.job_kinds")

    def register(func: Callable[..., str | None]) -> Callable[..., str | None]:
        other = _REGISTRY.get(kind)
        if other is not None and other.__qualname__ != func.__qualname__:
            raise ValueError(f"job kind {kind!r} already handled by {other.__module__}.{other.__qualname__}")
        _REGISTRY[kind] = func
        return func
    return register


def handler(kind: str) -> Callable[..., str | None]:
    """The registered handler of job ``kind``."""
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise LookupError(f"no handler registered for job kind {kind!r} (contest.tasks imports the services "
                          "that register them; is the contest app loaded?)") from None


def create_job(kind: str, *, contest=None, user=None, for_team=None, dispatch: bool = True, **args) -> Job:
    """Create a queued job and send it to the workers once the transaction commits.

    ``for_team``: the team whose upload the job is about, so that workers serve the teams in turn
    (:func:`claim_next`); not ``team``, which is an argument of some kinds."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    job = Job.objects.create(kind=kind, contest=contest, args=args, team=for_team,
                             created_by=user if getattr(user, "is_authenticated", False) else None)
    if dispatch:
        send(job)
    return job


def retry(job: Job, *, user=None) -> Job:
    """Re-run a failed job as a new job row with the same arguments; the failed row stays as it was."""
    if job.status != Job.FAILED:
        raise ValueError(f"only a failed job can be retried (job {job.pk} is {job.status})")
    with transaction.atomic():
        new = create_job(job.kind, contest=job.contest, user=user, for_team=job.team, **job.args)
        audit.record("retry_job", contest=job.contest, actor=user, obj=new, retry_of=job.pk, kind=job.kind)
    return new


def send(job: Job) -> None:
    """Hand ``job`` to the broker once the current transaction commits (so the worker sees the row).

    The job row is a transactional outbox: it is committed with the upload (or
    whatever asked for it) and only then sent. If the broker is unreachable the
    request still succeeds, ``sent_at`` stays empty, and the periodic sweep sends
    the job when the broker is back (:func:`requeue_stalled`). Nothing is lost
    and nothing counts twice. Inside :class:`Held`, the committed job waits for the
    batch's release instead.
    """
    batch = getattr(_HELD, "batch", None)
    if batch is not None:
        transaction.on_commit(lambda: batch.append((job.pk, job.kind)))
        return
    # Robust: what the transaction stored is committed whatever the send does, so a failure here (a
    # connection dropped just after the commit) is logged, never raised into the caller as if the
    # transaction had failed (an upload would be stored again); the sweep sends the job.
    transaction.on_commit(lambda: dispatch(job.pk, job.kind), robust=True)


_HELD = threading.local()


class Held:
    """A batch: the jobs that commit inside ``with Held() as batch:`` (in this thread) are sent together,
    at ``batch.release()`` or at the block's end, so the workers start on the whole backlog. After the
    release, jobs are sent at their commit again (also those that the released jobs create when they
    run here, in eager mode).

    ``simulate_contest`` stores a stage's uploads (the teams' work) inside one and releases it when
    the judge's stage starts, so that stage's time is the judge's work alone, whatever the storing
    cost the process that simulates the teams. Each job row commits as usual (a rolled-back one is
    never sent); a block that fails still sends what committed.
    """

    def __init__(self):
        self.jobs: list[tuple[int, str]] = []

    def __enter__(self) -> Held:
        if getattr(_HELD, "batch", None) is not None:
            raise RuntimeError("jobs are already held in this thread")
        _HELD.batch = self.jobs
        return self

    def release(self) -> int:
        """Stop holding and send the held jobs now; returns how many."""
        if _HELD.batch is self.jobs:
            _HELD.batch = None
        sent, self.jobs[:] = list(self.jobs), []
        for job_id, kind in sent:
            dispatch(job_id, kind)
        return len(sent)

    def __exit__(self, *exc) -> None:
        self.release()


def dispatch(job_id: int, kind: str) -> bool:
    """Publish the job's message now; record when. Returns False (and logs) if the broker is down."""
    if celery_app.conf.task_always_eager:  # tests and inline runs: the job runs here and now
        celery_app.signature(RUN_JOB_TASK, args=(job_id,)).apply_async()
        return True
    try:
        # No time limit in the message (explicit None; a signature would fill in the sender's): the worker
        # that runs the job applies its own TRACECUP_JOB_TIME_LIMIT, whatever the web process was given.
        # No message priority either: the message only wakes a worker of the queue, whose claim picks the job
        # (claim_next, by the kind's rank in contest.job_kinds).
        result = celery_app.send_task(RUN_JOB_TASK, args=(job_id,), queue=QUEUE_OF[kind],
                                      time_limit=None, soft_time_limit=None)
    except BROKER_ERRORS as exc:
        log.warning("job %s not sent, the broker is unreachable (%s); the sweep sends it later", job_id, exc)
        return False
    try:
        Job.objects.filter(pk=job_id).update(sent_at=timezone.now(), sends=F("sends") + 1,
                                             celery_id=getattr(result, "id", "") or "")
    except DatabaseError as exc:  # sent, not recorded: the sweep may send it again, a harmless duplicate
        log.warning("job %s sent but its send not recorded (%s)", job_id, exc)
        if not transaction.get_connection().in_atomic_block:
            connections.close_all()  # a dropped connection stays broken until closed
    return True


def progress(job: Job | None, fraction: float, message: str = "") -> None:
    """Record progress (0..1) and a short message on the job row; also a heartbeat."""
    if job is None:
        return
    fraction = min(max(float(fraction), 0.0), 1.0)
    Job.objects.filter(pk=job.pk).update(progress=fraction, message=message[:300], heartbeat_at=timezone.now())
    job.progress, job.message = fraction, message


def execute(job_id: int, *, pick: bool | None = None) -> str:
    """Run one job (called by the Celery task). Returns the final status.

    A delivery first claims a job with a conditional UPDATE: only a queued
    job, or a running one whose heartbeat is stale (its worker died), can be
    claimed, so of several deliveries of one message at most one runs the
    handler; the others return at once. While the handler runs, a heartbeat
    thread stamps ``heartbeat_at`` every ``TRACECUP_JOB_HEARTBEAT_SECONDS``,
    so the sweep can tell a long job from a dead one within a minute.

    ``pick`` (the default on a worker, not in eager mode, whose caller waits for
    its own job): the message of ``job_id`` only wakes the worker, which claims
    its queue's next job in the fair order (:func:`claim_next`), whichever job
    that is. Every job still has a message of its own, so every queued job
    gets a delivery; ``job_id`` itself is claimed only when nothing of its
    queue is queued (a dead worker's job whose heartbeat went stale).

    Raises :class:`TransientJobError` when the failure is worth a retry and
    attempts remain (the task turns it into a Celery retry).
    """
    token = uuid.uuid4().hex
    if pick is None:
        pick = not celery_app.conf.task_always_eager
    try:
        job, claimed = _claim(job_id, token, pick)
    except TRANSIENT_DATABASE_ERRORS as exc:  # the job's row is as it was: a later delivery claims it
        _close_connections()
        raise TransientJobError(str(exc)) from exc
    if job is None:
        log.warning("job %s vanished", job_id)
        return "missing"
    if not claimed:
        return job.status  # a duplicate delivery, or a job another worker runs: nothing to do
    mine = Job.objects.filter(pk=job.pk, claim=token)
    try:
        with _Heartbeat(job.pk, token):
            message = handler(job.kind)(job, **job.args)
    except SoftTimeLimitExceeded as exc:  # Celery's soft limit: the same input would run too long again
        _fail(job, exc, token, message=say("failed: ran past its time limit of %(seconds)s s",
                                           seconds=settings.TRACECUP_JOB_TIME_LIMIT))
        return Job.FAILED
    except TRANSIENT_DATABASE_ERRORS as exc:  # database locked / connection dropped: worth a retry
        # The database's fault, not the job's: the attempt is given back (attempts count the job's own
        # failures and its workers' deaths), so drops however many never fail it for good. Celery retries
        # it soon; if those retries run out too, the sweep sends it again after its back-off.
        _close_connections()
        _update_despite_drops(mine, status=Job.QUEUED, attempts=F("attempts") - 1,
                              message=say("retrying after a database error: %(reason)s", reason=exc)[:300])
        raise TransientJobError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - a bug or bad data: fail the job visibly, never loop or kill the worker
        _fail(job, exc, token)
        return Job.FAILED
    _update_despite_drops(mine, status=Job.SUCCEEDED, progress=1.0, finished_at=timezone.now(),
                          message=(message or say("done"))[:300], heartbeat_at=timezone.now())
    site_state.changed(job.team_id)  # a job's end is part of the pages' stamp (its team's)
    return Job.SUCCEEDED


def _claim(job_id: int, token: str, pick: bool) -> tuple[Job | None, bool]:
    """The job this delivery runs and whether it claimed it: its queue's next one (``pick``), else
    ``job_id`` itself if it is queued or its worker died (see :func:`execute`)."""
    now = timezone.now()
    if pick:
        kind = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
        picked = claim_next(QUEUE_OF.get(kind, DEFAULT_QUEUE), token, now) if kind is not None else None
        if picked is not None:
            return picked, True
    claimable = Q(status=Job.QUEUED) | Q(status=Job.RUNNING, heartbeat_at__lt=now - stale_after())
    claimed = Job.objects.filter(claimable, pk=job_id, attempts__lt=settings.TRACECUP_JOB_MAX_ATTEMPTS).update(
        **_claimed_fields(token, now))
    return Job.objects.filter(pk=job_id).first(), bool(claimed)


#: This process's Celery worker node name (``name@host``), set by ``contest.system.heartbeat`` before the
#: pool forks (its children inherit it) and written on every job a delivery claims; "" outside a worker.
WORKER_NAME = ""


def _claimed_fields(token: str, now) -> dict:
    """What a claim writes on the job's row: running, this delivery's and this worker's, one more attempt, a
    fresh heartbeat."""
    return {"status": Job.RUNNING, "claim": token, "worker": WORKER_NAME, "attempts": F("attempts") + 1,
            "started_at": Coalesce("started_at", Value(now)), "heartbeat_at": now, "error": ""}


#: Before every job: the last-served time of a team never served, and of the judge's own jobs (no team).
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def claimable(queue: str):
    """The queued jobs of ``queue`` that a worker may claim (attempts left), in no order."""
    return Job.objects.filter(status=Job.QUEUED, kind__in=BY_QUEUE[queue],
                              attempts__lt=settings.TRACECUP_JOB_MAX_ATTEMPTS)


def last_served(queue: str, teams) -> dict[int, datetime]:
    """team id -> when a worker last started a job of that team on ``queue``, for each of ``teams`` served
    at least once (one grouped query on the (team, started_at) index)."""
    return dict(Job.objects.filter(team__in=[t for t in teams if t is not None], kind__in=BY_QUEUE[queue],
                                   started_at__isnull=False)
                .values("team").annotate(latest=Max("started_at")).values_list("team", "latest"))


def turn_key(kind: str, team: int | None, created_at, pk: int, served: dict) -> tuple:
    """Where a queued job stands in the fair order, smallest first: best rank (``contest.job_kinds.rank``:
    the close before scoring before previews); within a rank, the team served least recently (teams never
    served, and jobs of no team, the judge's own, come first); then the oldest. So the teams are served in
    turn and a team's burst of uploads never delays another team's first one."""
    return rank(kind), served.get(team, _NEVER) if team is not None else _NEVER, created_at, pk


def fair_order(queue: str) -> list[tuple]:
    """Every queued job of ``queue`` a worker may claim, as (id, kind, team id, last served, created at), in
    the order of :func:`turn_key` as it stands now (``contest.selectors.queue_places`` plays it forward).
    Two queries whatever the queue's length (a subquery per job took 4.5 s a claim with 12,640 queued)."""
    rows = list(claimable(queue).values_list("pk", "kind", "team_id", "created_at"))
    served = last_served(queue, {team for _pk, _kind, team, _created in rows})
    rows.sort(key=lambda r: turn_key(r[1], r[2], r[3], r[0], served))
    return [(pk, kind, team, served.get(team, _NEVER) if team is not None else _NEVER, created)
            for pk, kind, team, created in rows]


def claim_next(queue: str, token: str, now=None) -> Job | None:
    """Claim the first job of the fair order (:func:`turn_key`) for this delivery (``token``); None if none is
    queued.

    The queue is read by group, not job by job: each team's (and the judge's) oldest queued job of each
    rank, the groups put in turn, then each group's oldest job tried in that order, so a claim costs a
    few queries on indexes however many jobs wait (3,000 attack uploads at 40 teams, 12,640 at 80).
    PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent workers each lock a different job
    instead of waiting on one another. SQLite (the embedded default, one writer at a time) has no row
    locks: the plain ordered pick, then the conditional UPDATE, which a concurrent claimer may have won;
    then the next job is tried.
    """
    now = now or timezone.now()
    for _ in range(5):
        with transaction.atomic():
            pk = _first_unlocked(queue)
            if pk is None:
                return None
            if Job.objects.filter(pk=pk, status=Job.QUEUED).update(**_claimed_fields(token, now)):
                return Job.objects.get(pk=pk)
    return None


def _first_unlocked(queue: str) -> int | None:
    """The id of the first job of the fair order that no other claimer holds locked (it is locked now)."""
    heads = list(claimable(queue).values("kind", "team").annotate(first=Min("created_at"), first_id=Min("id"))
                 .values_list("kind", "team", "first", "first_id"))
    served = last_served(queue, {team for _kind, team, _first, _id in heads})
    groups: dict[tuple, tuple] = {}
    for kind, team, first, first_id in heads:
        key = turn_key(kind, team, first, first_id, served)
        groups[(key[0], team)] = min(groups.get((key[0], team), key), key)
    skip_locked = connection.features.has_select_for_update_skip_locked
    in_turn = [group for group, _key in sorted(groups.items(), key=lambda g: g[1])]
    # First each team's head, in turn: while another worker is claiming a team's head, the next team has its
    # turn, not that team's next job (two workers on one team's burst while another team waits). The
    # judge's own jobs have no turns: the next of them no one holds. Then, if every head is held, any job
    # no one holds, so a free worker never leaves a queued job waiting.
    for heads_only in (True, False):
        for group_rank, team in in_turn:
            candidates = (claimable(queue).filter(kind__in=[k for k in BY_QUEUE[queue] if rank(k) == group_rank],
                                                  team=team).order_by("created_at", "id"))
            if heads_only and team is not None:
                head = candidates.values_list("pk", flat=True).first()
                candidates = claimable(queue).filter(pk=head)
            if skip_locked:
                candidates = candidates.select_for_update(skip_locked=True, of=("self",))
            pk = candidates.values_list("pk", flat=True).first()
            if pk is not None:
                return pk
        if not skip_locked:
            break  # no row locks (SQLite): the first pass found every head
    return None


# ----- a batch: one delivery runs several jobs of one kind ------------------------------------------------
def claim_also(leader: Job, job_ids: list[int]) -> list[Job]:
    """Claim the queued jobs ``job_ids`` for the delivery that runs ``leader`` (they take its claim token), so
    that its handler does their work in the same run (attack scoring: ``contest.services.attack_batches``).

    Each job keeps its own row, attempts and end: the handler finishes each with :func:`finish_claimed_many` or
    :func:`fail_claimed`, or hands it back with :func:`release_claimed`; the leader's heartbeat stamps them
    all, and a dead worker's are queued again by the sweep, as any job. Only jobs still queued (with
    attempts left) are claimed, and on PostgreSQL none that another claimer holds locked (``SKIP LOCKED``).
    Returns the claimed jobs in the order of ``job_ids``.
    """
    if not job_ids or not leader.claim:
        return []
    queued = Job.objects.filter(pk__in=job_ids, status=Job.QUEUED, attempts__lt=settings.TRACECUP_JOB_MAX_ATTEMPTS)
    with transaction.atomic():
        if connection.features.has_select_for_update_skip_locked:
            queued = Job.objects.filter(pk__in=list(queued.select_for_update(skip_locked=True, of=("self",))
                                                    .values_list("pk", flat=True)), status=Job.QUEUED)
        queued.update(**_claimed_fields(leader.claim, timezone.now()))
    claimed = Job.objects.in_bulk([pk for pk in job_ids if pk != leader.pk])
    return [claimed[pk] for pk in job_ids if pk in claimed and claimed[pk].claim == leader.claim
            and claimed[pk].status == Job.RUNNING]


def finish_claimed_many(messages: dict[Job, str]) -> set[int]:
    """End the jobs of a batch (:func:`claim_also`) whose claim still holds (the sweep did not give them to
    another run meanwhile), each as succeeded with its own message, in the caller's transaction so that each
    job's end commits with its work; returns the ids of those ended. Their rows stay locked to the end of
    that transaction, so the sweep cannot hand them to another run meanwhile."""
    if not messages:
        return set()
    token = next(iter(messages)).claim
    with transaction.atomic(savepoint=False):
        ours = set(Job.objects.select_for_update().filter(pk__in=[j.pk for j in messages], claim=token,
                                                          status=Job.RUNNING).values_list("pk", flat=True))
        now = timezone.now()
        Job.objects.filter(pk__in=ours).update(status=Job.SUCCEEDED, progress=1.0, finished_at=now, heartbeat_at=now)
        rows.update_each(Job, "message", {job.pk: message[:300] for job, message in messages.items() if job.pk in ours})
    if ours:
        site_state.changed(*{job.team_id for job in messages if job.pk in ours})
    return ours


def fail_claimed(job: Job, exc: BaseException) -> None:
    """End a job of a batch as failed by ``exc``, with its traceback, as its own run would have ended."""
    _fail(job, exc, job.claim)


def release_claimed(batch: list[Job], reason: str) -> None:
    """Hand the unfinished jobs of a batch back to the queue (the attempt given back: the run stopped for a
    reason not theirs, ``reason``) and send them again; a database that cannot be reached leaves them to
    the sweep (their heartbeat goes stale)."""
    try:
        ids = [j.pk for j in batch if Job.objects.filter(pk=j.pk, claim=j.claim, status=Job.RUNNING).update(
            status=Job.QUEUED, claim="", attempts=F("attempts") - 1, sent_at=None, message=reason[:300])]
    except TRANSIENT_DATABASE_ERRORS:
        log.warning("the batch's jobs %s could not be handed back; the sweep queues them again",
                    [j.pk for j in batch])
        _close_connections()
        return
    for job in batch:
        if job.pk in ids:
            send(job)


#: Errors of the database's connection or state, not of a job's input: the job is worth running again.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)


def _close_connections() -> None:
    """Close this thread's connections so the next query opens a new one (a dropped connection stays
    broken until closed); not inside a caller's transaction (an eager run in a test or command keeps its own)."""
    if not transaction.get_connection().in_atomic_block:
        connections.close_all()


def _update_despite_drops(rows, tries: int = 5, **fields) -> None:
    """``rows.update(**fields)``, tried again on a new connection while the database drops connections.

    The job's own end (or its hand-back) must be written: left running, the job would be taken for a dead
    worker's and cost an attempt. If every try fails, that is what happens (the sweep's re-queue)."""
    for n in range(tries):
        try:
            rows.update(**fields)
            return
        except TRANSIENT_DATABASE_ERRORS:
            if n == tries - 1 or transaction.get_connection().in_atomic_block:
                raise
            _close_connections()
            time.sleep(0.2 * (n + 1))


def stale_after() -> timedelta:
    """How old a running job's heartbeat may be before its worker counts as dead."""
    return timedelta(seconds=settings.TRACECUP_JOB_STALE_SECONDS)


class _Heartbeat:
    """Stamp the claimed job's ``heartbeat_at`` (and its batch's, :func:`claim_also`) from a thread while its
    handler runs.

    Not in eager mode (tests, inline runs): there the caller's own transaction
    holds the job and nothing sweeps it.
    """

    def __init__(self, job_id: int, token: str):
        self.job_id, self.token = job_id, token
        self.stop = threading.Event()
        self.thread = None

    def __enter__(self):
        if not celery_app.conf.task_always_eager:
            self.thread = threading.Thread(target=self._beat, name=f"heartbeat-job-{self.job_id}", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        return False

    def _beat(self):
        try:
            while not self.stop.wait(settings.TRACECUP_JOB_HEARTBEAT_SECONDS):
                try:
                    # every job of the claim: the job itself and those of its batch (claim_also)
                    Job.objects.filter(claim=self.token, status=Job.RUNNING).update(heartbeat_at=timezone.now())
                except Exception:  # a dropped connection: the next beat reconnects
                    log.warning("heartbeat of job %s failed", self.job_id, exc_info=True)
                    connections.close_all()
        finally:
            connections.close_all()


def _fail(job: Job, exc: BaseException, token: str, message: str = "") -> None:
    log.exception("job %s (%s) failed", job.pk, job.kind)
    Job.objects.filter(pk=job.pk, claim=token).update(
        status=Job.FAILED, finished_at=timezone.now(), message=(message or say("failed: %(reason)s", reason=exc))[:300],
        error="".join(traceback.format_exception(exc))[-8000:])
    site_state.changed(job.team_id)


def requeue_stalled(now=None) -> dict:
    """Re-queue or fail jobs whose worker died; send jobs the broker never got or lost.

    - A running job whose heartbeat is older than ``TRACECUP_JOB_STALE_SECONDS``
      (its worker was killed, its machine lost) is queued again, exactly once
      per death (a conditional UPDATE), while attempts remain; else failed.
    - A queued job never sent (the broker was down: the outbox) is sent.
    - A queued job sent long ago and still not started (the broker lost its
      queue) is sent again, with a back-off (one stale period, then doubling up
      to ``TRACECUP_JOB_TIME_LIMIT``) so a long but healthy queue gets few
      duplicates; a duplicate delivery is harmless (:func:`execute` claims).
    - A queued job last sent before the broker's server started
      (:func:`broker_started_at`) is sent again at once, whatever its back-off:
      a Redis restarted without its data lost that message, and the back-off of
      a job sent many times (up to 15 minutes) would leave it waiting that long.

    Called by the periodic sweep (``contest.tasks.sweep``). Returns counts.
    """
    now = now or timezone.now()
    stale = stale_after()
    requeued = failed = sent = 0
    failed_teams = set()
    for job in Job.objects.filter(status=Job.RUNNING, heartbeat_at__lt=now - stale):
        gone = Job.objects.filter(pk=job.pk, status=Job.RUNNING, claim=job.claim, heartbeat_at__lt=now - stale)
        if job.attempts >= settings.TRACECUP_JOB_MAX_ATTEMPTS:
            failed_teams.add(job.team_id)
            failed += gone.update(
                status=Job.FAILED, finished_at=now, message=say("failed: the worker stopped on every attempt"),
                error=f"no heartbeat for more than {stale} on attempt {job.attempts} of "
                      f"{settings.TRACECUP_JOB_MAX_ATTEMPTS}")
        elif gone.update(status=Job.QUEUED, claim="", sent_at=None,
                         message=say("retrying: the worker stopped (attempt %(attempt)s of %(attempts)s)",
                                             attempt=job.attempts + 1, attempts=settings.TRACECUP_JOB_MAX_ATTEMPTS)):
            requeued += 1
    if failed:
        site_state.changed(*failed_teams)
    limit = timedelta(seconds=settings.TRACECUP_JOB_TIME_LIMIT)
    restarted = broker_started_at()
    for job in Job.objects.filter(status=Job.QUEUED, created_at__lt=now - OUTBOX_GRACE).only("pk", "kind", "sent_at",
                                                                                           "sends"):
        if job.sent_at is not None and (restarted is None or job.sent_at >= restarted):
            wait = min(stale * 2 ** max(job.sends - 1, 0), max(limit, stale))
            if job.sent_at > now - wait:
                continue
        if dispatch(job.pk, job.kind):
            sent += 1
    return {"requeued": requeued, "failed": failed, "sent": sent}


def broker_started_at():
    """When the broker's server last started, or None where that cannot be told (the embedded broker, which
    keeps its messages in files across restarts; a Redis that is down or refuses ``INFO``).

    Redis says how long it has run (``INFO``'s ``uptime_in_seconds``); counted back from this machine's
    clock, so the two clocks need not agree. A message sent before then was sent to a server that has
    since stopped: without persistence (``redis-cli shutdown nosave``, a container without a volume) it is
    gone. With persistence it may still be queued, and sending it again makes one harmless duplicate."""
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)  # a sweep while the broker is down does not wait on it here
            client = getattr(conn.default_channel, "client", None)
            info = getattr(client, "info", None)
            if info is None:
                return None
            uptime = int(info("server")["uptime_in_seconds"])
    except (*BROKER_ERRORS, RedisError, KeyError, ValueError) as exc:
        log.info("the broker's start time is unknown (%s); queued jobs are sent again after their back-off", exc)
        return None
    return timezone.now() - timedelta(seconds=uptime)
