"""Every string a person is shown has its Japanese translation: the texts of the templates, the views,
the services (award titles and rules, sample anonymizer labels), the page script's strings, the
validator's messages and the 413 of the size cap, and the length notes of cut values."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from django.utils import translation

ROOT = Path(__file__).resolve().parents[2]


def _blocks(po: str) -> list[str]:
    return [b for b in po.split("\n\n") if "msgid" in b and 'msgid ""\nmsgstr ""\n"' not in b]


@pytest.mark.skipif(shutil.which("xgettext") is None,
                    reason="GNU gettext is needed to collect the strings (apt-get install gettext)")
def test_every_marked_string_of_the_code_has_a_translation(tmp_path):
    """Collect the strings as contest/web/locale/update.py does (into a copy) and find none new or changed
    that the committed catalog does not translate."""
    sys.path.insert(0, str(ROOT / "contest" / "web" / "locale"))
    try:
        import update
    finally:
        sys.path.pop(0)
    folders = [d for d in (ROOT / "templates").rglob("*") if d.is_dir()] + [ROOT / "templates"]
    touched = {d: d.stat().st_mtime_ns for d in folders}
    collected = update.extract(tmp_path).read_text(encoding="utf-8")
    # makemessages writes a Python rendering of each template beside it for a moment: never in the project's
    # own folders, where another test process walking the tree found the file and then could not read it
    # (a file made and removed in a folder changes the folder's modification time)
    assert {d: d.stat().st_mtime_ns for d in folders} == touched
    missing = [b for b in _blocks(collected)
               if re.search(r'^msgstr(\[0\])? ""$', b, re.M) or "#, fuzzy" in b]
    assert not missing, "untranslated (run contest/web/locale/update.py and translate):\n" + "\n\n".join(missing[:5])


def test_the_page_scripts_strings_are_translated():
    from contest.web.common import js_strings
    with translation.override("en"):
        english = js_strings()
    with translation.override("ja"):
        japanese = js_strings()
    same = [k for k in english if english[k] == japanese[k]]
    assert not same, same


def test_award_rules_sample_labels_and_byte_counts_read_in_japanese():
    from contest.services.results import AWARD_TITLES
    from contest.web.common import issue_rows
    from contest.web.views import _label, award_title
    with translation.override("ja"):
        for name in AWARD_TITLES:
            title, rule = award_title(name)
            assert not re.search(r"\b(highest|lowest|sum)\b", rule), (name, rule)
        assert _label("No obfuscation") == "匿名化なし" and _label("PL(4,1)") == "PL(4,1)"
        row = issue_rows([{"line": 2, "column": "reg_id", "value": "\\x89PNG... (313 bytes)",
                           "message": "not a text/CSV file", "code": "", "params": {}}])[0]
        assert row["value"].endswith("(313 バイト)"), row["value"]
    with translation.override("en"):
        row = issue_rows([{"line": 2, "value": "abc... (1200 characters)", "message": "x"}])[0]
        assert row["value"] == "abc… (1,200 characters)"


def test_every_string_the_page_script_shows_comes_from_the_catalog():
    """Each t("key", "English fallback") of static/js/tracecup.js has its key in js_strings(), so the
    fallback is never what a Japanese page shows."""
    from contest.web.common import js_strings
    script = (ROOT / "static" / "js" / "tracecup.js").read_text(encoding="utf-8")
    keys = set(re.findall(r'\bt\("([a-z_]+)"', script))
    assert keys and not keys - set(js_strings()), sorted(keys - set(js_strings()))


@pytest.mark.django_db
def test_a_japanese_page_leaves_the_next_test_in_english_first(client):
    """The first half: a request in Japanese, which Django's LocaleMiddleware serves by activating Japanese
    in this thread and leaving it there."""
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="ja").status_code == 200
    assert translation.get_language() == "ja"


def test_a_japanese_page_leaves_the_next_test_in_english_second():
    """The second half (the same process, the next test of the file): a test begins in the site's default
    language whatever an earlier test fetched (tests/conftest.py), so a refusal's message is English."""
    from django.conf import settings
    assert translation.get_language() == settings.LANGUAGE_CODE == "en"
