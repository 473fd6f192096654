"""A real Celery worker process for the integration and browser tests, and waiting for its jobs.

The worker runs ``celery -A contest worker`` on the test database (SQLite file
or PostgreSQL) and on a private broker queue (a folder under the test's
``tmp_path`` for the filesystem broker; the configured Redis database, purged,
otherwise), so no other worker (a running demo) takes the test's tasks.

The worker is started in its own process group and always stopped: at the
end of the test, and by an ``atexit`` handler if pytest is interrupted
(Ctrl-C, an internal error) before the fixture's teardown runs. Stopping
signals the whole group, so the worker's pool children go too.
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]

#: Worker processes started and not yet stopped (for the atexit handler).
_RUNNING: set[subprocess.Popen] = set()


def database_url() -> str:
    """``DATABASE_URL`` of the database this test process uses (the worker must use the same)."""
    from django.db import connection
    sd = connection.settings_dict
    if sd["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{sd['NAME']}"
    auth = sd["USER"] + (f":{sd['PASSWORD']}" if sd.get("PASSWORD") else "")
    return f"postgres://{auth}@{sd['HOST'] or '127.0.0.1'}:{sd['PORT'] or 5432}/{sd['NAME']}"


def reset_broker_pools(app) -> None:
    """Forget pooled broker connections, so the next send uses the current broker options.

    Eager tests earlier in the session already opened a producer pool with the
    default options (Celery acquires a producer even in eager mode). ``app._pool``
    is an entry of kombu's global pool registry: dropping it without resetting
    the registry would leave a closed pool behind ("Acquire on closed pool").
    """
    from kombu import pools
    app.amqp._producer_pool = None
    app._pool = None
    pools.reset()


def stop_worker(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the worker's process group (warm shutdown), then SIGKILL it if it does not exit."""
    _RUNNING.discard(proc)
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


def _stop_all_at_exit() -> None:
    for proc in list(_RUNNING):
        stop_worker(proc, timeout=5.0)


atexit.register(_stop_all_at_exit)


@pytest.fixture
def celery_worker(transactional_db, tmp_path):
    """A started ``celery worker`` process (yielded) on the test database and a private queue."""
    from contest.celery import app
    from contest.settings import filesystem_broker_options, make_local_folders
    env = dict(os.environ, DATABASE_URL=database_url(), CELERY_TASK_ALWAYS_EAGER="0", PYTHONUNBUFFERED="1")
    old_options = dict(app.conf.broker_transport_options or {})
    if settings.CELERY_BROKER_URL.startswith("filesystem"):
        broker = tmp_path / "broker"
        env["TRACECUP_BROKER_DIR"] = str(broker)
        app.conf.broker_transport_options = filesystem_broker_options(broker)
        make_local_folders(app.conf.broker_transport_options)
        reset_broker_pools(app)
    else:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge("celery")
    log_path = tmp_path / "worker.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "contest", "worker", "-l", "INFO", "-c", "2",
                             "--without-mingle", "--without-gossip", "-n", f"itest{os.getpid()}@%h"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _RUNNING.add(proc)
    try:
        deadline = time.time() + 90
        while "ready." not in log_path.read_text():
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail("celery worker did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.3)
        yield proc
    finally:
        stop_worker(proc)
        log.close()
        app.conf.broker_transport_options = old_options
        reset_broker_pools(app)


def wait_for_jobs(contest=None, timeout: float = 300.0, kinds=None) -> None:
    """Block until every job (of ``contest``, of ``kinds``) has finished; fail on a failed job.

    With ``contest`` given, at least one such job must exist (a page may still
    be about to create it); without, all jobs of the database are waited for.
    """
    from contest.models import Job
    deadline = time.time() + timeout
    while True:
        qs = Job.objects.all() if contest is None else Job.objects.filter(contest=contest)
        if kinds:
            qs = qs.filter(kind__in=kinds)
        if (contest is None or qs.exists()) and not qs.filter(status__in=(Job.QUEUED, Job.RUNNING)).exists():
            break
        if time.time() > deadline:
            pytest.fail(f"jobs still unfinished after {timeout}s: "
                        f"{list(qs.values_list('pk', 'kind', 'status', 'message'))}")
        time.sleep(0.3)
    failed = list(qs.filter(status=Job.FAILED).values_list("pk", "kind", "message", "error"))
    assert not failed, f"failed jobs: {failed}"
