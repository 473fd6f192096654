"""Security review of the pages: a failed judge job's internals never reach a team's page (rules §1)."""
from __future__ import annotations

import pytest

from contest.models import Dataset, Job
from contest.services import uploads
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db

SECRET = "stored file 17 (orgtraces_Zq9x_02.csv) fails its SHA-256 check"


def test_failed_scoring_job_text_is_not_shown_to_the_team(generated, client_for):
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    # The eager worker scored it; make its job look like a crash, as a worker would record one.
    Job.objects.filter(kind="score_anonymized", args__anonymized_set_id=aset.pk).update(
        status=Job.FAILED, message=f"failed: {SECRET}", error=f"Traceback ...\nOSError: {SECRET}\n")
    aset.__class__.objects.filter(pk=aset.pk).update(status="pending", s_u=None, valid=None)
    c = client_for("alpha1")
    for url in (f"/c/tc/team/uploads/{aset.pk}/", f"/c/tc/team/uploads/{aset.pk}/status.json", "/c/tc/team/"):
        r = c.get(url)
        assert r.status_code == 200, url
        assert b"Zq9x" not in r.content and b"SHA-256 check" not in r.content, url


def test_another_teams_pages_are_refused(generated, client_for):
    """Team 2 probing team 1's ids: the map of its O, its upload pages, its selection; and the admin."""
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv"))
    beta = client_for("beta1")
    for url in (f"/c/tc/team/datasets/{ds.pk}/map/", f"/c/tc/team/datasets/{ds.pk}/map/?upload={aset.pk}",
                f"/c/tc/team/uploads/{aset.pk}/", f"/c/tc/team/uploads/{aset.pk}/status.json",
                f"/files/{ds.original_id}/", f"/files/{aset.file_id}/"):
        assert beta.get(url).status_code == 403, url
    assert beta.post(f"/c/tc/team/uploads/{aset.pk}/select/").status_code == 403
    # The admin is for staff with model permissions: a participant is sent to the admin login.
    r = beta.get("/admin/contest/storedfile/")
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    r = beta.get(f"/admin/contest/dataset/{ds.pk}/change/")
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    # The owner does see its map.
    assert client_for("alpha1").get(f"/c/tc/team/datasets/{ds.pk}/map/").status_code == 200
