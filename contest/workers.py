"""Starting and stopping the judge's Celery worker processes from Python (demo, simulation, tests).

``celery -A contest worker -Q <queues>`` started in its own process group (so
Ctrl-C in a terminal reaches the parent first, and stopping signals the worker's
pool children too), on the database this process uses, and stopped by SIGTERM
with a grace period, then SIGKILL of the whole group. Process ids and resident
memory are read from ``/proc`` (Linux), for the figures of the simulation.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from contest.queues import DEFAULT_QUEUE, JUDGE_QUEUES, WORKER_OPTIONS, with_sweep


class WorkerStartError(RuntimeError):
    """A worker process exited or did not report ready in time; the message holds its log's end."""


def database_url() -> str:
    """``DATABASE_URL`` of the database this process uses (a worker it starts must use the same)."""
    sd = connection.settings_dict
    if sd["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{sd['NAME']}"
    auth = sd["USER"] + (f":{sd['PASSWORD']}" if sd.get("PASSWORD") else "")
    return f"postgres://{auth}@{sd['HOST'] or '127.0.0.1'}:{sd['PORT'] or 5432}/{sd['NAME']}"


def worker_command(queues: str, concurrency: int, name: str, loglevel: str = "INFO") -> list[str]:
    """The command line of a worker serving ``queues`` (comma-separated) and the sweep's queue
    (``contest.queues.with_sweep``) with ``concurrency`` processes."""
    return [sys.executable, "-m", "celery", "-A", "contest", "worker", "-l", loglevel, "-c", str(concurrency),
            "-Q", with_sweep(queues), *WORKER_OPTIONS, "-n", f"{name}@%h"]


def start_worker(queues: str, concurrency: int, name: str, log_path: Path, env: dict | None = None,
                 timeout: float = 90.0) -> subprocess.Popen:
    """Start a worker (its own process group, output to ``log_path``) and wait until it says it is ready."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", DATABASE_URL=database_url(), **(env or {}))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(worker_command(queues, concurrency, name), cwd=settings.BASE_DIR, env=env,  # noqa: S603 - worker_command() builds the argument list, no shell
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while "ready." not in Path(log_path).read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process_groups([proc], grace=5)
            raise WorkerStartError(f"celery worker {name} did not start:\n"
                                   + Path(log_path).read_text(errors="replace")[-3000:])
        time.sleep(0.2)
    return proc


def start_contest_workers(judge_processes: int, log_dir: Path, tag: str,
                          teams_processes: int = 1) -> list[subprocess.Popen]:
    """The workers of a contest as the demo and docker-compose run them: ``teams_processes`` on the teams'
    queue (docker-compose's ``worker-teams`` runs 2) and ``judge_processes`` on the judge's queues
    (``contest.queues``); logs ``<tag>-teams.log`` and ``<tag>-judge.log`` in ``log_dir``. Stop them with
    :func:`stop_process_groups`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    procs = [start_worker(DEFAULT_QUEUE, teams_processes, f"{tag}{os.getpid()}-teams", log_dir / f"{tag}-teams.log")]
    try:
        procs.append(start_worker(JUDGE_QUEUES, judge_processes, f"{tag}{os.getpid()}-judge",
                                  log_dir / f"{tag}-judge.log"))
    except Exception:
        stop_process_groups(procs, grace=5)
        raise
    return procs


def stop_process_groups(procs: list[subprocess.Popen], grace: float) -> None:
    """SIGTERM each process's group, wait up to ``grace`` seconds in all, then SIGKILL the groups left.

    Whole groups, because a worker's pool children and runserver's threads
    must go with their parents.
    """
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # also pool children whose parent already exited
        except ProcessLookupError:
            pass
        try:
            p.wait(3)
        except subprocess.TimeoutExpired:
            pass


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (a worker and its pool children), from /proc."""
    found, todo = [pid], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            for k in kids:
                if k not in found:
                    found.append(k)
                    todo.append(k)
    return found


def resident_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
