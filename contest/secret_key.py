"""Which ``SECRET_KEY`` may sign a production site's sessions, password-reset links and messages.

A key that signs them must be one nobody else knows: with a known key anyone can sign a session cookie
for any account. One rule (:func:`weakness`), used twice: ``contest.settings`` refuses to start with
``TRACECUP_PRODUCTION=1`` (``DEBUG`` on or off) and a weak key, and :func:`check_secret_key`, a deploy
check, reports one to ``manage.py check --deploy`` whatever the settings (it is registered when the app
starts). Known weak keys:

- this repository's development key (:data:`DEVELOPMENT_KEY`), which anyone with the source has;
- a key Django's ``startproject`` generated (``django-insecure-...``), made for development and in
  countless public repositories;
- a key shorter than 50 characters or of fewer than 5 different ones, the bounds of Django's own
  deploy check, which warns of those but knows nothing of the development key above.

Importable by the settings before Django is set up.
"""
from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured

#: The development key: signs the demo's and the tests' sessions, so they survive a restart; never production's.
DEVELOPMENT_KEY = "dev-only-tracecup-key-not-for-production-use-0123456789abcdef"  # noqa: S105 - the public development key this module refuses in production

#: How to make a key, in every refusal.
ADVICE = ("set SECRET_KEY in the environment to a long random key, "
          "e.g. python -c \"import secrets; print(secrets.token_urlsafe(50))\"")


def weakness(key: str) -> str:
    """Why ``key`` must not sign a production site (see the module docstring), or "" when it may."""
    if not key:
        return "not set"
    if key == DEVELOPMENT_KEY:
        return "the repository's development key, public in its source"
    if key.startswith(SECRET_KEY_INSECURE_PREFIX):
        return f"a development key of Django's startproject (it starts with {SECRET_KEY_INSECURE_PREFIX!r})"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"{len(key)} characters long, fewer than {SECRET_KEY_MIN_LENGTH}"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"made of {len(set(key))} different characters, fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS}"
    return ""


def refusal(key: str) -> str:
    """The message refusing to start production with ``key``, or "" when it may sign production's sessions."""
    reason = weakness(key)
    if reason == "not set":
        return "SECRET_KEY must be set in the environment when TRACECUP_PRODUCTION=1; " + ADVICE
    if reason:
        return f"SECRET_KEY is {reason}: refused with TRACECUP_PRODUCTION=1; {ADVICE}"
    return ""


@checks.register(checks.Tags.security, deploy=True)
def check_secret_key(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """``contest.E001`` when the settings' ``SECRET_KEY`` is weak (:func:`weakness`)."""
    try:
        reason = weakness(settings.SECRET_KEY)
    except ImproperlyConfigured:  # Django refuses to read an empty key
        reason = "not set"
    if not reason:
        return []
    return [checks.Error(f"SECRET_KEY is {reason}; it must not sign a production site's sessions.",
                         hint=ADVICE, id="contest.E001")]
