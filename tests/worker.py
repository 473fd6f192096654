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
import time
from pathlib import Path

import pytest
from django.conf import settings

from contest import queues
from contest.workers import database_url, stop_process_groups, worker_command

ROOT = Path(__file__).resolve().parents[1]

#: Worker processes started and not yet stopped (for the atexit handler).
_RUNNING: set[subprocess.Popen] = set()


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


def purge_queues() -> int:
    """Drop every message waiting in the broker's job queues (Redis); returns how many were dropped."""
    from contest.celery import app
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        dropped = 0
        for queue in queues.NAMES:
            try:
                dropped += channel.queue_purge(queue) or 0
            except Exception:  # noqa: BLE001, S110 - a queue never declared has nothing to drop
                pass
        return dropped


def stop_worker(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the worker's process group (warm shutdown), then SIGKILL it if it does not exit."""
    _RUNNING.discard(proc)
    stop_process_groups([proc], grace=timeout)


def _stop_all_at_exit() -> None:
    for proc in list(_RUNNING):
        stop_worker(proc, timeout=5.0)


atexit.register(_stop_all_at_exit)


class WorkerEnv:
    """The test's private broker queue and a worker process on it, which a test may kill and restart.

    ``extra`` environment variables (``TRACECUP_JOB_HEARTBEAT_SECONDS``...) go to
    every worker this object starts. :meth:`lose_queue` drops the messages
    waiting in the broker (what a Redis restart without persistence does).
    """

    def __init__(self, tmp_path: Path, extra: dict | None = None):
        self.tmp_path = tmp_path
        self.env = dict(os.environ, DATABASE_URL=database_url(), CELERY_TASK_ALWAYS_EAGER="0", PYTHONUNBUFFERED="1",
                        **(extra or {}))
        self.broker_dir = tmp_path / "broker" if settings.CELERY_BROKER_URL.startswith("filesystem") else None
        if self.broker_dir is not None:
            self.env["TRACECUP_BROKER_DIR"] = str(self.broker_dir)
        self.proc: subprocess.Popen | None = None  # the worker started last
        self.procs: list[subprocess.Popen] = []
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.tmp_path / f"worker{self.starts}.log"

    def start(self, concurrency: int = 2, queues: str = queues.ALL_QUEUES, env: dict | None = None) -> subprocess.Popen:
        """Start ``celery worker`` on ``queues`` (default: every job queue) in its own process group and
        wait until it is ready. Several may run at once (one per set of queues); :meth:`stop` stops all.
        ``env`` adds variables for this worker alone (another machine's ``TRACECUP_VAR_DIR`` and ``TMPDIR``)."""
        self.starts += 1
        log_path = self.log_path
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                worker_command(queues, concurrency, f"itest{os.getpid()}-{self.starts}"),
                cwd=ROOT, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _RUNNING.add(proc)
        self.proc = proc
        self.procs.append(proc)
        deadline = time.time() + 90
        while "ready." not in log_path.read_text():
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail("celery worker did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.3)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            stop_worker(proc)

    def kill(self) -> None:
        """SIGKILL the whole worker: the main process and its pool children at once (a crashed machine)."""
        _RUNNING.discard(self.proc)
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def pool_children(self) -> list[int]:
        """Process ids of the worker's pool children (the processes that run the tasks)."""
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def kill_busy_child(self) -> int:
        """SIGKILL the pool child that has used the most CPU (the one running the job; what the
        kernel's out-of-memory killer picks). The main process lives on and forks a new child."""
        def cpu_ticks(pid: int) -> int:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        busiest = max(self.pool_children(), key=cpu_ticks)
        os.kill(busiest, signal.SIGKILL)
        return busiest

    def lose_queue(self) -> int:
        """Drop every message waiting in the broker's queue; returns how many were dropped."""
        if self.broker_dir is not None:
            files = list((self.broker_dir / "queue").glob("*.msg"))
            for f in files:
                f.unlink()
            return len(files)
        return purge_queues()

    def log(self) -> str:
        return "".join((self.tmp_path / f"worker{n}.log").read_text()[-3000:] for n in range(1, self.starts + 1))


@pytest.fixture
def worker_env(transactional_db, tmp_path):
    """A :class:`WorkerEnv` on the test database and a private queue; its worker is stopped at the end.

    The test process sends its jobs to the same queue (its broker options are
    pointed there and restored afterwards).
    """
    from contest.celery import app
    from contest.settings import filesystem_broker_options, make_local_folders
    old_options = dict(app.conf.broker_transport_options or {})
    workers = WorkerEnv(tmp_path)
    if workers.broker_dir is not None:
        app.conf.broker_transport_options = filesystem_broker_options(workers.broker_dir)
        make_local_folders(app.conf.broker_transport_options)
        reset_broker_pools(app)
    else:
        purge_queues()
    try:
        yield workers
    finally:
        workers.stop()
        app.conf.broker_transport_options = old_options
        reset_broker_pools(app)


@pytest.fixture
def celery_worker(worker_env):
    """A started ``celery worker`` process (yielded) on the test database and a private queue."""
    yield worker_env.start()


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
