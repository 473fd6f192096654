from django.apps import AppConfig


class ContestConfig(AppConfig):
    name = "contest"
    verbose_name = "TraceCup contest"
    default_auto_field = "django.db.models.BigAutoField"
