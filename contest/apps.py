from django.apps import AppConfig


class ContestConfig(AppConfig):
    name = "contest"
    verbose_name = "TraceCup contest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The embedded default keeps SQLite and the filesystem broker under the var dir: make the
        # folders when the app starts (web, worker, commands, tests), never when settings are imported.
        from django.conf import settings

        from contest.settings import make_local_folders
        make_local_folders(getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None)
                           if settings.CELERY_BROKER_URL.startswith("filesystem") else None)
        # The job handlers register themselves when their services are imported; the tasks
        # module imports them all (and binds the Celery tasks), in every kind of process.
        import contest.tasks  # noqa: F401
