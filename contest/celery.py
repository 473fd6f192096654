"""The Celery app of the judge (DESIGN "Work in the background").

Configuration comes from Django settings (``CELERY_*``), themselves read from
the environment. Run a worker with ``celery -A contest worker`` and the
periodic sweep with ``celery -A contest beat``.
"""
import os

from celery import Celery
from celery.signals import worker_process_init
from django.conf import settings

from contest import broker

# filesystem:// (the embedded default) without kombu's torn-message race (contest.broker).
broker.install()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contest.settings")

app = Celery("contest")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["contest"])


@worker_process_init.connect
def lower_priority(**_kwargs) -> None:
    """Each pool process runs at ``TRACECUP_WORKER_NICE``: where web and workers share cores, a page
    request is served before the judge's batch work (which only waits while pages are requested)."""
    if settings.TRACECUP_WORKER_NICE > 0:
        os.nice(settings.TRACECUP_WORKER_NICE)
