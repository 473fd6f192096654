"""The judge's worker processes yield the CPU to the web (issue 24's page targets while a round is judged):
every pool process of a real ``celery worker`` runs at ``TRACECUP_WORKER_NICE`` above its parent, and the
parent, which only takes messages, keeps its own priority."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.worker import celery_worker, worker_env  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads niceness from Linux's /proc")]


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])  # field 19: nice


def test_pool_processes_run_at_the_configured_niceness(celery_worker, worker_env):
    assert settings.TRACECUP_WORKER_NICE == 10                 # the default, from settings
    parent = _nice(celery_worker.pid)
    deadline = time.monotonic() + 30
    while True:
        children = worker_env.pool_children()
        niceness = [_nice(pid) for pid in children]
        if len(children) == 2 and all(n == min(parent + 10, 19) for n in niceness):
            break
        assert time.monotonic() < deadline, f"pool processes {children} at niceness {niceness}, parent {parent}"
        time.sleep(0.2)
    assert _nice(celery_worker.pid) == parent
