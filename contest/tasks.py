"""Celery tasks: thin wrappers over ``contest.services`` (DESIGN "Work in the background").

This module is the top of the import graph: it imports the services whose
functions handle job kinds (each registers itself with ``jobs.handles``), and no
service imports it. The contest app imports it at start (``ContestConfig.ready``)
so the registry is complete in the web server, the worker, commands and tests.
"""
from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from contest.services import (  # noqa: F401 (register handlers)
    analyses,
    announcements,
    bundles,
    generation,
    jobs,
    judge,
    previews,
    results,
    round_figures,
    schedule,
    uploads,
)

log = logging.getLogger(__name__)


@worker_ready.connect
def check_bundle_folder(sender=None, **_kwargs) -> list[str]:
    """At a worker's start, say what is wrong with its bundle folder (``bundles.bundle_dir_problems``: not
    writable, or not the folder where the built zips are), once, in its log, rather than let every
    download that misses rebuild a zip."""
    try:
        problems = bundles.bundle_dir_problems()
    except Exception as exc:  # noqa: BLE001 - the database may not be up yet: a start is never refused for this
        log.warning("the bundle folder could not be checked at start: %s", exc)
        return []
    for problem in problems:
        log.error("bundle folder: %s", problem)
    return problems


@shared_task(name=jobs.RUN_JOB_TASK, bind=True, acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(jobs.TransientJobError,), max_retries=3, retry_backoff=5, retry_jitter=True)
def run_job(self, job_id: int) -> str:
    """Run the job row ``job_id`` (generation, scoring, phase close, judge attacks, results)."""
    return jobs.execute(job_id)


@shared_task(name="contest.tasks.sweep", acks_late=True)
def sweep(now=None) -> dict:
    """Periodic (beat): re-queue or fail stalled jobs, close phases (both kinds) whose deadline passed."""
    report = jobs.requeue_stalled(now)
    report["phases_closed"] = schedule.close_due_phases(now)
    return report
