"""The one table of the system app: each Celery worker's last heartbeat."""
from __future__ import annotations

from django.db import models
from django.utils import timezone


class WorkerHeartbeat(models.Model):
    """What a Celery worker said of itself at its last heartbeat (``contest.system.heartbeat``).

    One row per worker name (``celery -n``; docker-compose's default ``celery@<container>``), written by
    a thread of the worker's main process every ``TRACECUP_WORKER_HEARTBEAT_SECONDS``. In the database,
    because the database is the one thing every machine of the site shares (no shared disk, and the
    cache may be each process's own memory): the System page, ``/readyz`` and ``/metrics`` of any web
    server read the same rows. A worker that stops warmly sets ``stopped_at``; one that is killed just
    falls silent, and its row ages. The jobs it runs are the running job rows that name it
    (``Job.worker``).
    """

    name = models.CharField(max_length=200, unique=True, help_text="the worker's node name, name@host")
    hostname = models.CharField(max_length=200, help_text="the machine (or container) it runs on")
    queues = models.JSONField(default=list, help_text="the queues it consumes")
    pid = models.PositiveIntegerField(help_text="its main process id on that machine")
    concurrency = models.PositiveIntegerField(default=0, help_text="its pool processes")
    rss_bytes = models.BigIntegerField(default=0, help_text="resident memory of the main process and its pool")
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="set by a warm shutdown")

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name
