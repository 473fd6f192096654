"""Job rows and their dispatch to Celery (DESIGN "Work in the background").

Every background operation is a :class:`~contest.models.Job` of a ``kind``
(one of :data:`KINDS`) handled by one service function ``handler(job, **job.args)``.
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
import traceback
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from contest.celery import app as celery_app
from contest.models import Job
from contest.services import audit

log = logging.getLogger(__name__)

#: Every job kind. The handler of each is registered by its service with :func:`handles`.
KINDS = (
    "generate_round",       # contest.services.generation: synthesize a round's data
    "score_anonymized",     # contest.services.uploads: validate an anonymized set and compute s_U
    "score_attack",         # contest.services.uploads: validate and score an etable/etraces
    "close_anonymization",  # contest.services.judge: freeze final sets, pseudonymize them
    "judge_attacks",        # contest.services.judge: the judge's attacks on one public set
    "compute_results",      # contest.services.results: the results snapshot (and publish)
    "rescore",              # contest.services.results: one re-scoring job per scored object
    "privacy_preview",      # contest.services.previews: the team's private preview of a valid set
)

#: The Celery task that runs every job (contest.tasks.run_job), named so this module needn't import it.
RUN_JOB_TASK = "contest.tasks.run_job"

_REGISTRY: dict[str, Callable[..., str | None]] = {}

#: Celery message priority per job kind (Redis: 0 is served first, 9 last); other kinds get 0.
#: A privacy preview is a team's convenience and must never delay scoring or a phase close.
PRIORITY = {"privacy_preview": 9}


class TransientJobError(Exception):
    """A failure worth retrying (database lock, lost connection)."""


def handles(kind: str):
    """Register the decorated function as the handler of job ``kind`` (one per kind)."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; add it to jobs.KINDS")

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


def create_job(kind: str, *, contest=None, user=None, dispatch: bool = True, **args) -> Job:
    """Create a queued job and send it to the workers once the transaction commits."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    job = Job.objects.create(kind=kind, contest=contest, args=args,
                             created_by=user if getattr(user, "is_authenticated", False) else None)
    if dispatch:
        send(job)
    return job


def retry(job: Job, *, user=None) -> Job:
    """Re-run a failed job as a new job row with the same arguments; the failed row stays as it was."""
    if job.status != Job.FAILED:
        raise ValueError(f"only a failed job can be retried (job {job.pk} is {job.status})")
    with transaction.atomic():
        new = create_job(job.kind, contest=job.contest, user=user, **job.args)
        audit.record("retry_job", contest=job.contest, actor=user, obj=new, retry_of=job.pk, kind=job.kind)
    return new


def send(job: Job) -> None:
    """Queue ``job`` on Celery after the current transaction commits (so the worker sees the row)."""
    def _send():
        result = celery_app.signature(RUN_JOB_TASK, args=(job.pk,)).apply_async(priority=PRIORITY.get(job.kind, 0))
        if result is not None and result.id and not celery_app.conf.task_always_eager:
            Job.objects.filter(pk=job.pk, celery_id="").update(celery_id=result.id)

    transaction.on_commit(_send)


def progress(job: Job | None, fraction: float, message: str = "") -> None:
    """Record progress (0..1) and a short message on the job row; also a heartbeat."""
    if job is None:
        return
    fraction = min(max(float(fraction), 0.0), 1.0)
    Job.objects.filter(pk=job.pk).update(progress=fraction, message=message[:300], heartbeat_at=timezone.now())
    job.progress, job.message = fraction, message


def execute(job_id: int) -> str:
    """Run one job (called by the Celery task). Returns the final status.

    Raises :class:`TransientJobError` when the failure is worth a retry and
    attempts remain (the task turns it into a Celery retry).
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            log.warning("job %s vanished", job_id)
            return "missing"
        if job.status in (Job.SUCCEEDED, Job.FAILED):
            return job.status  # idempotent: a duplicate delivery does nothing
        job.attempts += 1
        job.status = Job.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.heartbeat_at = timezone.now()
        job.error = ""
        job.save(update_fields=["attempts", "status", "started_at", "heartbeat_at", "error"])
    try:
        message = handler(job.kind)(job, **job.args)
    except OperationalError as exc:  # database locked / connection dropped: worth a retry
        if job.attempts < settings.TRACECUP_JOB_MAX_ATTEMPTS:
            Job.objects.filter(pk=job.pk).update(status=Job.QUEUED, message=f"retrying after: {exc}"[:300])
            raise TransientJobError(str(exc)) from exc
        _fail(job, exc)
        return Job.FAILED
    except Exception as exc:  # a bug or bad data: fail visibly, never loop
        _fail(job, exc)
        return Job.FAILED
    Job.objects.filter(pk=job.pk).update(status=Job.SUCCEEDED, progress=1.0, finished_at=timezone.now(),
                                         message=(message or "done")[:300], heartbeat_at=timezone.now())
    return Job.SUCCEEDED


def _fail(job: Job, exc: BaseException) -> None:
    log.exception("job %s (%s) failed", job.pk, job.kind)
    Job.objects.filter(pk=job.pk).update(
        status=Job.FAILED, finished_at=timezone.now(), message=f"failed: {exc}"[:300],
        error="".join(traceback.format_exception(exc))[-8000:])


def requeue_stalled(now=None) -> dict:
    """Re-queue or fail jobs whose worker died or whose message was lost.

    A running job whose heartbeat is older than ``TRACECUP_JOB_TIME_LIMIT``
    seconds (its worker died or hung) is re-queued while attempts remain, else
    failed; a queued job older than that (its message was lost) is re-sent.
    Called by the periodic sweep (``contest.tasks.sweep``).
    """
    now = now or timezone.now()
    limit = timedelta(seconds=settings.TRACECUP_JOB_TIME_LIMIT)
    requeued = failed = 0
    stuck = Job.objects.filter(status=Job.RUNNING, heartbeat_at__lt=now - limit)
    for job in stuck:
        if job.attempts >= settings.TRACECUP_JOB_MAX_ATTEMPTS:
            Job.objects.filter(pk=job.pk, status=Job.RUNNING).update(
                status=Job.FAILED, finished_at=now, message="failed: stuck past its time limit",
                error=f"no progress for more than {limit}; {job.attempts} attempts")
            failed += 1
        elif Job.objects.filter(pk=job.pk, status=Job.RUNNING).update(
                status=Job.QUEUED, message="re-queued: stuck past its time limit", created_at=now):
            send(job)
            requeued += 1
    for job in Job.objects.filter(status=Job.QUEUED, created_at__lt=now - limit):
        if Job.objects.filter(pk=job.pk, status=Job.QUEUED).update(created_at=now):
            send(job)
            requeued += 1
    return {"requeued": requeued, "failed": failed}
