from django.apps import AppConfig


class ContestConfig(AppConfig):
    name = "contest"
    verbose_name = "TraceCup contest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Django imports an app's module before its models are ready: what needs the models (the tasks,
        # the services they import, the page cache's signals) is imported once the app is ready, here.
        from django.conf import settings  # local: Django's app loading, see above
        from django.db.models.signals import post_delete, post_save  # local: Django's app loading

        import contest.tasks  # noqa: F401  # local: imports every service and model
        from contest.settings import make_local_folders  # local: Django's app loading
        from contest.web import page_cache  # local: imports the models

        # The embedded default keeps SQLite and the filesystem broker under the var dir: make the
        # folders when the app starts (web, worker, commands, tests), never when settings are imported.
        make_local_folders(getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None)
                           if settings.CELERY_BROKER_URL.startswith("filesystem") else None)
        # contest.tasks (imported above) imports the services, whose job handlers register themselves,
        # and binds the Celery tasks, in every kind of process.
        # Any saved or deleted row of this app makes the cached public pages of this process (or of
        # every process, with a shared CACHE_URL) outdated.
        for model in self.get_models():
            post_save.connect(page_cache.bump, sender=model, dispatch_uid=f"page-cache-save-{model.__name__}")
            post_delete.connect(page_cache.bump, sender=model, dispatch_uid=f"page-cache-delete-{model.__name__}")
