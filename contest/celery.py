"""The Celery app of the judge (DESIGN "Work in the background").

Configuration comes from Django settings (``CELERY_*``), themselves read from
the environment. Run a worker with ``celery -A contest worker`` and the
periodic sweep with ``celery -A contest beat``.
"""
import os

from celery import Celery

from contest import broker

# filesystem:// (the embedded default) without kombu's torn-message race (contest.broker).
broker.install()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contest.settings")

app = Celery("contest")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["contest"])
