"""The Japanese catalog reads as one text: a message that names a button or a tab quotes the label the page
shows ("Close now" is 「今すぐ締切」 on the button and in the refusal that points to it)."""
from __future__ import annotations

import re
from pathlib import Path

PO = Path(__file__).resolve().parents[2] / "contest" / "web" / "locale" / "ja" / "LC_MESSAGES" / "django.po"


def catalog() -> dict[str, str]:
    """{msgid: msgstr} of the singular entries of the Japanese catalog (written unwrapped: one line each)."""
    text = PO.read_text(encoding="utf-8")
    pairs = re.findall(r'^msgid "(.*)"\nmsgstr "(.*)"$', text, re.M)
    return {k.replace('\\"', '"'): v.replace('\\"', '"') for k, v in pairs if k}


def test_a_message_that_names_a_label_quotes_the_label_as_the_page_shows_it():
    entries = catalog()
    wrong = []
    for msgid, msgstr in entries.items():
        for label in re.findall(r'"([^"<>]+)"|“([^”]+)”', msgid):
            label = label[0] or label[1]
            if label in entries and f"「{entries[label]}」" not in msgstr:
                wrong.append(f"{msgid!r} names {label!r} ({entries[label]}): {msgstr}")
    assert not wrong, "\n".join(wrong)
