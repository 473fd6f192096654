"""TraceCup platform: the Django project and the contest app (SPEC sections 1, 4-9, 12).

The Celery app is imported here so that ``@shared_task`` functions bind to it
in every process (web, worker, beat, management commands).
"""
from .celery import app as celery_app

__all__ = ("celery_app",)
