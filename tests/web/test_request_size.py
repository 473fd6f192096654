"""The hard cap on a request's size: answered 413 before anything reads the body; nothing stored or counted."""
from __future__ import annotations

import io

import pytest
from django.test import RequestFactory

from contest.models import AnonymizedSet, Dataset, StoredFile
from contest.upload_limits import CappedUploadHandler, RequestSizeLimitMiddleware, RequestTooLarge
from tests.contest.conftest import anonymize_csv


def _ds(contest):
    return Dataset.objects.get(round__contest=contest, number=1, challenge=1)


@pytest.mark.parametrize("where", ["page", "api"])
def test_a_request_declaring_more_than_the_cap_is_refused_unread(generated, client_for, settings, where):
    settings.TRACECUP_MAX_REQUEST_BYTES = 50_000
    contest, ds = generated, _ds(generated)
    alpha = client_for("alpha1")
    files_before = StoredFile.objects.count()
    big = anonymize_csv(ds) + b"\n" * 60_000              # past the cap: honest Content-Length
    url = (f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/" if where == "page"
           else f"/api/datasets/{ds.pk}/anonymized-sets/")
    r = alpha.post(url, {"file": io.BytesIO(big)}, HTTP_ACCEPT="application/json")
    assert r.status_code == 413
    # the rule the rules page and the upload card state (contest.upload_limits.limit_text)
    assert "at most 48.8\xa0KiB uncompressed" in r.json()["error"]["message"]
    assert StoredFile.objects.count() == files_before and not AnonymizedSet.objects.filter(dataset=ds).exists()


def test_a_plain_form_post_past_the_cap_gets_the_sites_error_page_with_its_policy(generated, client_for, settings):
    """Without the page script (no JSON asked for) the 413 is the site's page, in the asker's language,
    under the same Content-Security-Policy as every page."""
    settings.TRACECUP_MAX_REQUEST_BYTES = 50_000
    ds = _ds(generated)
    alpha = client_for("alpha1")
    alpha.cookies["django_language"] = "ja"
    r = alpha.post(f"/c/{generated.slug}/team/datasets/{ds.pk}/upload/", {"file": io.BytesIO(b"0" * 60_000)})
    assert r.status_code == 413 and r["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in r["Content-Security-Policy"]
    page = r.content.decode()
    assert "展開後 48.8\xa0KiB まで" in page and "<html lang=\"ja\"" in page  # the message in the asker's language


def test_a_streamed_body_is_stopped_at_the_cap_by_the_upload_handler(settings):
    """Chunked uploads declare no length: the handler counts what streams in and stops at the cap."""
    settings.TRACECUP_MAX_REQUEST_BYTES = 1000
    handler = CappedUploadHandler()
    handler.handle_raw_input(None, {}, 0, b"x")
    handler.receive_data_chunk(b"a" * 600, 0)
    with pytest.raises(RequestTooLarge):
        handler.receive_data_chunk(b"a" * 600, 600)
    request = RequestFactory().post("/api/datasets/1/anonymized-sets/")
    response = RequestSizeLimitMiddleware(lambda r: None).process_exception(request, RequestTooLarge("x"))
    assert response.status_code == 413 and b"request_too_large" in response.content


def test_uploads_reach_the_service_as_files_not_bytes(generated, client_for, django_capture_on_commit_callbacks,
                                                      monkeypatch, settings):
    """Above FILE_UPLOAD_MAX_MEMORY_SIZE an upload is a temporary file the services stream from."""
    from contest.services import uploads
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    ds = _ds(generated)
    seen = []
    real = uploads.submit_anonymized_set
    monkeypatch.setattr(uploads, "submit_anonymized_set",
                        lambda **kw: seen.append(type(kw["content"]).__name__) or real(**kw))
    csv = anonymize_csv(ds)
    with django_capture_on_commit_callbacks(execute=True):
        r = client_for("alpha1").post(f"/api/datasets/{ds.pk}/anonymized-sets/", {"file": io.BytesIO(csv)})
    assert r.status_code == 202, r.content
    assert seen and seen[0] != "bytes"
    aset = AnonymizedSet.objects.get(dataset=ds)
    from contest.services import storage
    assert storage.read_bytes(aset.file) == csv and aset.status == AnonymizedSet.VALID
