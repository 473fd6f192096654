"""The Japanese catalog reads as one text: a message that names a button or a tab quotes the label the page
shows ("Close now" is 「今すぐ締切」 on the button and in the refusal that points to it); the contest's judge is
審査 everywhere (not ジャッジ or 審判) and its sample attacks サンプル攻撃 (not 見本攻撃); a Japanese sentence ends
with 。, not an ASCII period, also where a template puts a period after a translated text."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


#: The one word of each role or thing, and the words that were used for it beside it.
TERMS = {"審査": ("ジャッジ", "審判"), "サンプル攻撃": ("見本攻撃",)}

#: An ASCII period that ends a Japanese sentence: after Japanese text (or a placeholder or bracket closing it)
#: and before a space, the end or more Japanese; "T. Murakami", "et al." and "pip install ." are not sentences.
JA = "\u3040-\u30ff\u4e00-\u9fff\uff01-\uff5e「」、"
ASCII_PERIOD = re.compile(rf"(?:[{JA}]|%\(\w+\)s|\{{\w+\}})\.(?=\s|$|[{JA}])|\.(?=[{JA}])")


def test_one_word_for_the_judge_and_no_ascii_period_ends_a_japanese_sentence():
    mixed, periods = [], []
    for msgid, msgstr in catalog().items():
        mixed += [f"{word} for {term}: {msgstr}" for term, words in TERMS.items() for word in words if word in msgstr]
        if ASCII_PERIOD.search(re.sub(r"<[^>]*>", "", msgstr)):
            periods.append(f"{msgid!r}: {msgstr}")
    assert not mixed, "\n".join(mixed)
    assert not periods, "\n".join(periods)


def test_no_template_puts_an_ascii_period_after_a_translated_text():
    """A period outside the translation (``{% endblocktrans %}.``) stays ASCII in the Japanese page."""
    after_text = re.compile(r"(?:\{% endblocktrans %\}|\{% trans \"[^\"]*\" %\})(?:</\w+>|\)|\{% (?:if|endif|with|endwith)"
                            r"[^%]*%\})*\.(?:\s|\{|<|$)")
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in sorted((ROOT / "templates").rglob("*.html"))
             for m in after_text.finditer(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
