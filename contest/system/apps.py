import os

from django.apps import AppConfig


class SystemConfig(AppConfig):
    """Loads the worker heartbeat's signal handlers in every process (only a worker's signals fire them)."""

    name = "contest.system"
    label = "system"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from contest.system import heartbeat  # noqa: F401  # local: connects the worker signals at app start
        # prometheus-client's multiprocess mode writes every counted request there (contest.system.metrics).
        folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if folder:
            os.makedirs(folder, exist_ok=True)
