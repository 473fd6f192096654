"""Celery tasks: thin wrappers over ``contest.services`` (DESIGN "Work in the background").

This module is the top of the import graph: it imports the services whose
functions handle job kinds (each registers itself with ``jobs.handles``), and no
service imports it. The contest app imports it at start (``ContestConfig.ready``)
so the registry is complete in the web server, the worker, commands and tests.
"""
from __future__ import annotations

from celery import shared_task

from contest.services import (  # noqa: F401 (register handlers)
    analyses,
    announcements,
    attack_batches,
    backup,
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


@shared_task(name="contest.tasks.backup", acks_late=True)
def backup_database() -> str:
    """Periodic (beat, ``TRACECUP_BACKUP_SECONDS``): a backup of the whole database (contest.services.backup)."""
    return backup.backup_task()
