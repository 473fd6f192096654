"""``manage.py worker_health``: exit 0 while a Celery worker of this machine beats, 1 otherwise.

docker-compose's health check of the worker services: the worker's heartbeat row
(``contest.system.heartbeat``) proves its main process runs and reaches the database, which
``celery inspect ping`` (a broadcast, slow, and off without remote control) would not.
"""
from __future__ import annotations

import socket

from django.core.management.base import BaseCommand, CommandError

from contest.system.overview import live_workers


class Command(BaseCommand):
    help = "Exit 0 if a worker on this host (or --host) has beaten within TRACECUP_WORKER_STALE_SECONDS."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=socket.gethostname(), help="the machine's name (default: this one)")

    def handle(self, *args, **opts):
        names = list(live_workers().filter(hostname=opts["host"]).values_list("name", flat=True))
        if not names:
            raise CommandError(f"no live worker on {opts['host']}")
        self.stdout.write(f"alive: {', '.join(names)}")
