"""The upload size rule is stated once, in one unit, and its advice holds: the limit binds the uncompressed
CSV, so no page, refusal or page-script string tells a team to compress a file that is too large."""
from __future__ import annotations

import gzip
import io

import pytest
from django.utils import translation

from contest.models import Dataset
from contest.upload_rule import limit_text, size_text
from contest.web.common import js_strings
from tests.contest.conftest import anonymize_csv

RULE = {"en": "at most 48.8\xa0KiB uncompressed (a .gz or .zip counts by the CSV it holds)",
        "ja": "展開後 48.8\xa0KiB まで (.gz や .zip は中の CSV の大きさで数えます)"}


def test_sizes_are_stated_in_mib():
    assert size_text(200 * 1024 * 1024) == "200\xa0MiB" and size_text(50_000) == "48.8\xa0KiB"
    assert size_text(0) == "0\xa0B" and size_text(1023) == "1023\xa0B" and size_text(1024) == "1\xa0KiB"
    with translation.override("en"):
        assert limit_text(200 * 1024 * 1024).startswith("at most 200\xa0MiB uncompressed")


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_rules_the_card_and_the_refusal_state_one_rule_without_advising_compression(
        generated, client_for, lang):
    generated.upload_size_limit = 50_000
    generated.save(update_fields=["upload_size_limit"])
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    alpha = client_for("alpha1")
    alpha.cookies["django_language"] = lang
    pages = [alpha.get(f"/c/{generated.slug}/rules/"), alpha.get(f"/c/{generated.slug}/team/")]
    for r in pages:
        page = r.content.decode()
        assert r.status_code == 200 and RULE[lang] in page, r.request["PATH_INFO"]
        assert "compress the" not in page and "圧縮してください" not in page
    assert f'data-max-text="{RULE[lang]}"' in pages[1].content.decode()
    big = gzip.compress(anonymize_csv(ds) + b"\n" * 60_000)   # small as sent, past the limit uncompressed
    assert len(big) < 50_000
    r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {"file": io.BytesIO(big)},
                   HTTP_ACCEPT_LANGUAGE=lang)
    assert r.status_code == 413, r.content
    message = r.json()["error"]["message"]
    assert RULE[lang] in message and "bytes" not in message and "バイト" not in message, message
    with translation.override(lang):
        assert "compress" not in js_strings()["file_too_large"] and "圧縮" not in js_strings()["file_too_large"]
