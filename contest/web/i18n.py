"""Language of the HTML pages: English by default, Japanese on request.

The pages follow, in order: the language cookie set by the switcher in the
page header (Django's ``set_language`` view), then the browser's
Accept-Language, then English. Only ``en`` and ``ja`` are offered.

Why this module exists: the web package's catalog lives in
``contest/web/locale`` and the pages must translate even when the project
settings do not list ``contest.web`` as an app or enable ``LocaleMiddleware``
(both are asked of the settings owner; with them in place this code is a
harmless no-op re-activation).
"""
from __future__ import annotations

import functools
import gettext as gettext_module
from pathlib import Path

from django.conf import settings
from django.utils import translation
from django.utils.translation import trans_real

LANGUAGES = ("en", "ja")
DEFAULT = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"


def _ensure_catalog(lang: str) -> None:
    """Merge this package's compiled catalog into Django's translation for ``lang`` once."""
    if lang == DEFAULT:
        return
    trans = trans_real.translation(lang)
    if getattr(trans, "_tracecup_web_merged", False):
        return
    mo = LOCALE_DIR / lang / "LC_MESSAGES" / "django.mo"
    if mo.exists():
        with mo.open("rb") as fh:
            trans.merge(gettext_module.GNUTranslations(fh))
    trans._tracecup_web_merged = True


def language_for(request) -> str:
    """The page language for ``request`` (cookie, then Accept-Language, then English)."""
    cookie = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
    if cookie:
        code = cookie.split("-")[0].lower()
        if code in LANGUAGES:
            return code
    header = request.META.get("HTTP_ACCEPT_LANGUAGE", "")
    for code, _q in trans_real.parse_accept_lang_header(header):
        code = code.split("-")[0].lower()
        if code in LANGUAGES:
            return code
        if code == "*":
            break
    return DEFAULT


def localized(view):
    """Run ``view`` with the page language active, and say so in the response."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        lang = language_for(request)
        _ensure_catalog(lang)
        with translation.override(lang):
            request.LANGUAGE_CODE = lang
            response = view(request, *args, **kwargs)
            # Template responses render lazily: render inside the language.
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()
        response.headers.setdefault("Content-Language", lang)
        vary = response.headers.get("Vary")
        response.headers["Vary"] = f"{vary}, Accept-Language, Cookie" if vary else "Accept-Language, Cookie"
        return response

    return wrapper
