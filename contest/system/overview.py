"""The figures of the System page, ``/readyz`` and ``/metrics``: workers, queue depths, job times, sizes.

Reads only: every figure comes from the database (job rows, worker heartbeats, stored files) or the
broker (the length of each queue), at the moment it is asked; nothing is kept between calls. Who may see
which jobs is ``contest.permissions``'s (``system_jobs``); callers pass the jobs a viewer may see.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from contest import job_kinds, queues
from contest.celery import app as celery_app
from contest.models import Job, StoredFile
from contest.services.jobs import OUTBOX_GRACE, stale_after
from contest.system.models import WorkerHeartbeat

#: The window of the page's job times: jobs that ended within it.
WINDOW = timedelta(hours=1)
#: Failed jobs listed per kind (newest first).
FAILURES_SHOWN = 5
#: Queues whose depth is read: every job queue and the sweep's.
DEPTH_QUEUES = (*queues.NAMES, queues.SWEEP_QUEUE)
#: kombu's Redis transport keeps a queue's messages of each priority step in a list of its own
#: (``<queue>\x06\x16<step>``; step 0 is the queue's own name): a queue's depth is their sum.
REDIS_PRIORITY_SEP, REDIS_PRIORITY_STEPS = "\x06\x16", (0, 3, 6, 9)


# ---------------------------------------------------------------- workers
def worker_stale() -> timedelta:
    """How long a worker's heartbeat may be silent before it counts as dead."""
    return timedelta(seconds=settings.TRACECUP_WORKER_STALE_SECONDS)


def live_workers(now=None):
    """Heartbeat rows of the workers alive now: beat within :func:`worker_stale`, not stopped."""
    now = now or timezone.now()
    return WorkerHeartbeat.objects.filter(beat_at__gte=now - worker_stale(), stopped_at__isnull=True)


@dataclass
class WorkerState:
    """A worker's row as the page shows it. ``state``: ``alive``, ``silent`` (no beat for longer than
    :func:`worker_stale`: killed, its machine or its database connection lost) or ``stopped`` (warm
    shutdown). ``age``: seconds since its last beat."""

    row: WorkerHeartbeat
    state: str
    age: float
    jobs: list = field(default_factory=list)


def workers(now=None) -> list[WorkerState]:
    """Every worker heard of in the last day, alive ones first, each with the running jobs that name it."""
    now = now or timezone.now()
    rows = list(WorkerHeartbeat.objects.all())
    running: dict[str, list[Job]] = {}
    for job in Job.objects.filter(status=Job.RUNNING, worker__in=[r.name for r in rows]).order_by("pk"):
        running.setdefault(job.worker, []).append(job)
    out = []
    for row in rows:
        age = (now - row.beat_at).total_seconds()
        state = "stopped" if row.stopped_at else ("alive" if age <= worker_stale().total_seconds() else "silent")
        out.append(WorkerState(row, state, age, running.get(row.name, []) if state == "alive" else []))
    order = {"alive": 0, "silent": 1, "stopped": 2}
    return sorted(out, key=lambda w: (order[w.state], w.row.name))


def queues_without_worker(now=None) -> list[str]:
    """Job queues (``contest.queues.NAMES``) that no live worker consumes: their jobs wait for nobody."""
    served = {q for qs in live_workers(now).values_list("queues", flat=True) for q in qs}
    return [q for q in queues.NAMES if q not in served]


# ---------------------------------------------------------------- the broker
def queue_depths() -> dict[str, int]:
    """Messages waiting in each queue of :data:`DEPTH_QUEUES`, read from the broker (Redis: the lists'
    lengths; the embedded broker: its message files). Raises what the broker raises when it is away."""
    url = celery_app.conf.broker_url or settings.CELERY_BROKER_URL
    scheme = urlparse(url).scheme
    if scheme.startswith("filesystem"):
        folder = Path((celery_app.conf.broker_transport_options or {}).get("data_folder_in", "."))
        names = [n.rpartition(".")[0].partition(".")[2] for n in os.listdir(folder) if n.endswith(".msg")]
        return {q: names.count(q) for q in DEPTH_QUEUES}
    if scheme in ("redis", "rediss"):
        client = redis_client(url)
        try:
            with client.pipeline() as pipe:
                for q in DEPTH_QUEUES:
                    for step in REDIS_PRIORITY_STEPS:
                        pipe.llen(q if step == 0 else f"{q}{REDIS_PRIORITY_SEP}{step}")
                lengths = pipe.execute()
        finally:
            client.close()
        n = len(REDIS_PRIORITY_STEPS)
        return {q: int(sum(lengths[i * n:(i + 1) * n])) for i, q in enumerate(DEPTH_QUEUES)}
    raise ValueError(f"queue depths are not read from a {scheme}:// broker")


def redis_client(url: str):
    """A Redis client of ``url`` that gives up within a second or two (a health check must answer)."""
    import redis  # local: only a Redis broker needs it
    return redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=2.0)


# ---------------------------------------------------------------- jobs
@dataclass
class KindStats:
    """Jobs of one kind that ended within the window: ``count`` (succeeded + failed), ``failed``,
    ``p50`` and ``p95`` run time in seconds (first claim to end, retries included; None without jobs),
    ``failures``: the newest failed jobs; ``running`` and ``queued``: now."""

    kind: str
    count: int = 0
    failed: int = 0
    p50: float | None = None
    p95: float | None = None
    failures: list = field(default_factory=list)
    running: int = 0
    queued: int = 0

    @property
    def label(self) -> str:
        """What a person calls the kind (``contest.job_kinds``, translated)."""
        return job_kinds.label(self.kind)


def job_stats(jobs, now=None) -> list[KindStats]:
    """Per kind (those with any job in the window or now running or queued), from the job rows ``jobs``."""
    now = now or timezone.now()
    ended = jobs.filter(finished_at__gte=now - WINDOW, started_at__isnull=False,
                        status__in=(Job.SUCCEEDED, Job.FAILED))
    times: dict[str, list[float]] = {}
    stats: dict[str, KindStats] = {}
    for kind, status, started, finished in ended.values_list("kind", "status", "started_at", "finished_at"):
        s = stats.setdefault(kind, KindStats(kind))
        s.count += 1
        s.failed += status == Job.FAILED
        times.setdefault(kind, []).append(max((finished - started).total_seconds(), 0.0))
    for kind, seconds in times.items():
        p50, p95 = np.percentile(np.asarray(seconds), [50, 95])
        stats[kind].p50, stats[kind].p95 = float(p50), float(p95)
    for row in jobs.filter(status__in=(Job.RUNNING, Job.QUEUED)).values("kind", "status").annotate(n=Count("pk")):
        s = stats.setdefault(row["kind"], KindStats(row["kind"]))
        setattr(s, row["status"], row["n"])
    for kind, s in stats.items():
        if s.failed:
            s.failures = list(ended.filter(kind=kind, status=Job.FAILED).order_by("-finished_at")[:FAILURES_SHOWN])
    return sorted(stats.values(), key=lambda s: s.kind)


def retrying_jobs(jobs):
    """Jobs queued again after an attempt that did not finish (a worker stopped, a transient error)."""
    return jobs.filter(status=Job.QUEUED, attempts__gt=0).order_by("created_at")


def stuck_jobs(jobs, now=None) -> list[tuple[Job, str]]:
    """(job, why) of the jobs that wait for something that will not come by itself soon:

    - ``no_heartbeat``: running, its heartbeat silent past ``TRACECUP_JOB_STALE_SECONDS`` (its worker
      died; the sweep queues it again);
    - ``not_sent``: queued, never handed to the broker for longer than a sweep period (the broker was
      down; the sweep sends it when it answers);
    - ``no_worker``: queued while no live worker consumes its queue.
    """
    now = now or timezone.now()
    idle = set(queues_without_worker(now))
    unsent_after = timedelta(seconds=settings.TRACECUP_SWEEP_SECONDS) + OUTBOX_GRACE
    out = [(j, "no_heartbeat") for j in jobs.filter(status=Job.RUNNING, heartbeat_at__lt=now - stale_after())]
    for job in jobs.filter(status=Job.QUEUED).order_by("created_at"):
        if job_kinds.QUEUE_OF.get(job.kind, queues.DEFAULT_QUEUE) in idle:
            out.append((job, "no_worker"))
        elif job.sent_at is None and job.created_at < now - unsent_after:
            out.append((job, "not_sent"))
    return out


# ---------------------------------------------------------------- sizes
def database_bytes() -> int:
    """The database's size on disk: PostgreSQL's ``pg_database_size``, SQLite's file (and its journal)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return int(cursor.fetchone()[0])
    name = str(connection.settings_dict["NAME"])
    return sum(os.path.getsize(p) for p in (name, f"{name}-wal", f"{name}-journal") if os.path.exists(p))


def storage_totals() -> dict:
    """Stored files: how many, their bytes as sent and as stored (compressed chunks), in bytes."""
    totals = StoredFile.objects.aggregate(files=Count("pk"), size=Sum("size"), stored=Sum("compressed_size"))
    return {"files": totals["files"], "size": totals["size"] or 0, "stored": totals["stored"] or 0}
