from django.apps import AppConfig


class ContestConfig(AppConfig):
    name = "contest"
    verbose_name = "TraceCup contest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Django imports an app's module before its models are ready: what needs the models (the tasks
        # and the services they import) is imported once the app is ready, here.
        from django.conf import settings  # local: Django's app loading, see above

        import contest.secret_key  # noqa: F401  # local: registers its deploy check, whatever the settings
        import contest.services.accounts  # noqa: F401  # local: its signal replaces a token on a new password
        import contest.tasks  # noqa: F401  # local: imports every service and model
        from contest.settings import make_local_folders  # local: Django's app loading

        # The embedded default keeps SQLite and the filesystem broker under the var dir: make the
        # folders when the app starts (web, worker, commands, tests), never when settings are imported.
        make_local_folders(getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None)
                           if settings.CELERY_BROKER_URL.startswith("filesystem") else None)
        # contest.tasks (imported above) imports the services, whose job handlers register themselves,
        # and binds the Celery tasks, in every kind of process.
