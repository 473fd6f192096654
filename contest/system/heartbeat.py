"""Each Celery worker says it is alive: a row of :class:`~contest.system.models.WorkerHeartbeat`.

Why not Celery's own ``inspect ping``: it broadcasts and waits a timeout for the replies (a second at
least, at every page load), the embedded broker has no remote control, and the workers run without gossip
and mingle (``contest.queues.WORKER_OPTIONS``). Why the database, not
the cache or a file: the database is the one thing every machine of the site shares and every worker
needs anyway; a file needs a shared disk, and the cache may be each process's own memory (no
``CACHE_URL``) and forgets while Redis is down.

A thread of the worker's *main* process writes the row (started by ``worker_ready``, so after the pool
forked: the pool children never inherit it) every ``TRACECUP_WORKER_HEARTBEAT_SECONDS``: the main process
only dispatches messages, so it beats while its pool children run hour-long jobs. Which jobs they run is
on the job rows: each claim writes the worker's name (``contest.services.jobs.WORKER_NAME``, set here
before the pool forks), since a delivery runs its queue's next job, not necessarily its message's. A warm
shutdown marks the row stopped at once; a killed worker falls silent and counts as dead after
``TRACECUP_WORKER_STALE_SECONDS`` (three missed beats). One UPDATE per worker every 10 s.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta

from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown
from django.conf import settings
from django.db import connections
from django.utils import timezone

from contest.services import jobs
from contest.system.models import WorkerHeartbeat
from contest.workers import process_tree, resident_mb

log = logging.getLogger(__name__)

#: Rows silent for longer than this are deleted by any worker's beat (a machine retired long ago).
FORGET_AFTER = timedelta(days=1)

_beating: dict[str, object] = {}


def memory_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and every process below it (the pool children), in bytes (Linux /proc)."""
    return int(sum(resident_mb(p) for p in process_tree(pid)) * 1024 * 1024)


def name_shared_with(name: str, now) -> tuple[str, int] | None:
    """(hostname, pid) of another process whose live row carries ``name``, else None.

    Rows are one per name, so two workers under one name (celery's default ``celery@<host>`` for both,
    started by hand on one machine without ``-n``) overwrite each other's row: the System page, /readyz
    and /metrics then see one of them. A worker killed and restarted within the stale time is also
    found once, until its first beat replaces the old pid.
    """
    fresh = now - timedelta(seconds=settings.TRACECUP_WORKER_STALE_SECONDS)
    return (WorkerHeartbeat.objects.filter(name=name, stopped_at__isnull=True, beat_at__gte=fresh)
            .exclude(hostname=socket.gethostname(), pid=os.getpid()).values_list("hostname", "pid").first())


def beat(name: str, queues: list[str], concurrency: int, started_at) -> None:
    """Write this worker's row now (create it at the first beat); warn when another process has its name."""
    now = timezone.now()
    other = name_shared_with(name, now)
    if other:
        log.warning("worker %s: another process (%s pid %s) beats under the same name; give each worker its "
                    "own name (celery worker -n NAME@%%h) or the System page and /readyz see only one", name, *other)
    WorkerHeartbeat.objects.update_or_create(name=name, defaults={
        "hostname": socket.gethostname(), "queues": queues, "pid": os.getpid(), "concurrency": concurrency,
        "rss_bytes": memory_bytes(os.getpid()), "started_at": started_at,
        "beat_at": now, "stopped_at": None})
    WorkerHeartbeat.objects.filter(beat_at__lt=now - FORGET_AFTER).delete()


def _loop(stop: threading.Event, name: str, queues: list[str], concurrency: int) -> None:
    """Beat until ``stop`` is set; a failed beat (the database away) is logged and the next one tried."""
    started_at = timezone.now()
    while True:
        try:
            beat(name, queues, concurrency, started_at)
        except Exception:  # noqa: BLE001 - a database outage must not end the worker's beats for good
            log.warning("worker heartbeat of %s failed; trying again", name, exc_info=True)
        finally:
            connections.close_all()  # this thread's connection: a dropped one is not reused
        if stop.wait(settings.TRACECUP_WORKER_HEARTBEAT_SECONDS):
            return


@celeryd_after_setup.connect
def name_the_claims(sender=None, **_kwargs) -> None:
    """Before the pool forks: the jobs this worker's processes claim carry its name (``sender``)."""
    jobs.WORKER_NAME = str(sender or "")


@worker_ready.connect
def start_beating(sender=None, **_kwargs) -> None:
    """Start the heartbeat thread of this worker (``sender``: its consumer)."""
    name = getattr(sender, "hostname", "") or f"celery@{socket.gethostname()}"
    try:
        queues = sorted(q.name for q in sender.task_consumer.queues)
    except AttributeError:
        queues = sorted(sender.app.amqp.queues.consume_from) if sender is not None else []
    concurrency = int(getattr(getattr(sender, "pool", None), "num_processes", 0) or 0)
    stop = threading.Event()
    thread = threading.Thread(target=_loop, args=(stop, name, queues, concurrency), name="worker-heartbeat",
                              daemon=True)
    _beating.update(name=name, stop=stop, thread=thread)
    thread.start()


@worker_shutdown.connect
def stop_beating(**_kwargs) -> None:
    """A warm shutdown: stop the thread and mark the row stopped, so the page says so at once."""
    if not _beating:
        return
    _beating["stop"].set()
    _beating["thread"].join(timeout=5)
    try:
        WorkerHeartbeat.objects.filter(name=_beating["name"]).update(stopped_at=timezone.now())
    except Exception:  # noqa: BLE001 - the database may be the reason for the shutdown; the row then ages
        log.warning("could not mark worker %s stopped", _beating["name"], exc_info=True)
    finally:
        connections.close_all()
