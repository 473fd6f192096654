"""Refresh the Japanese catalog of the web pages after changing their English texts.

    .venv/bin/python contest/web/locale/update.py

Collects every translatable string of ``contest/web/``, ``templates/``, ``contest/services/``,
``contest/upload_limits.py``, ``contest/upload_rule.py``, ``contest/permissions.py``,
``contest/db_unavailable.py``, the job kinds' labels (``contest/job_kinds.py``),
the API's errors (``contest/api/``) and the validator's messages (``scoring/errors.py``)
(Django's ``makemessages``, which keeps the existing translations), writes
``ja/LC_MESSAGES/django.po`` here and compiles ``django.mo`` next to it. New
strings come out untranslated: translate them in the .po and run this again
(``tests/web/test_pages.py`` fails while one is missing). Needs GNU gettext
(``apt-get install gettext``) on the maintainer's machine only: the compiled
.mo is committed, so CI and deployments never run it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PO = HERE / "ja" / "LC_MESSAGES" / "django.po"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tracecup-i18n-") as tmp:
        shutil.copy(extract(Path(tmp)), PO)
    subprocess.run(["msgfmt", "--check-format", "-o", str(PO.with_suffix(".mo")), str(PO)], check=True)  # noqa: S603, S607 - gettext's msgfmt from PATH, a developer's tool
    print(f"updated {PO} and {PO.with_suffix('.mo')}")
    return 0


def extract(work: Path) -> Path:
    """Collect every translatable string into a copy of the catalog under ``work`` (the committed one
    is not touched) and return that copy's path; ``tests/web/test_translations.py`` reads it."""
    (work / "web").symlink_to(ROOT / "contest" / "web")
    # copied, not linked: makemessages writes each template's Python rendering (``400.html.py``) beside it,
    # which through a link landed in the project's own templates/ for a moment, where another test process
    # walking the tree found it and then could not read it
    shutil.copytree(ROOT / "templates", work / "templates")
    (work / "services").symlink_to(ROOT / "contest" / "services")  # award titles (gettext_noop)
    (work / "site").mkdir()  # messages made before a view runs (the 413 of the size cap)
    (work / "site" / "upload_limits.py").symlink_to(ROOT / "contest" / "upload_limits.py")
    (work / "site" / "upload_rule.py").symlink_to(ROOT / "contest" / "upload_rule.py")  # the size rule's sentences
    # reasons of a refusal that pages show in the page language (gettext_noop in contest.permissions)
    (work / "site" / "permissions.py").symlink_to(ROOT / "contest" / "permissions.py")
    # the 503 of a database that cannot be reached, made outside any view
    (work / "site" / "db_unavailable.py").symlink_to(ROOT / "contest" / "db_unavailable.py")
    # the job kinds' labels (the console, the System page, a job's own page)
    (work / "site" / "job_kinds.py").symlink_to(ROOT / "contest" / "job_kinds.py")
    (work / "api").symlink_to(ROOT / "contest" / "api")  # the API's own error messages, in Accept-Language
    (work / "validator").mkdir()  # the validator's message templates (scoring.errors.MESSAGES)
    (work / "validator" / "errors.py").symlink_to(ROOT / "scoring" / "errors.py")
    target = work / "locale" / "ja" / "LC_MESSAGES"
    target.mkdir(parents=True)
    if PO.exists():
        shutil.copy(PO, target / "django.po")  # makemessages merges into it, keeping translations
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="contest.settings", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "django", "makemessages", "-l", "ja", "--symlinks", "--no-location", "--no-wrap",
                    "-i", "web/locale/*"], cwd=work, env=env, check=True, capture_output=True)
    return target / "django.po"


if __name__ == "__main__":
    raise SystemExit(main())
