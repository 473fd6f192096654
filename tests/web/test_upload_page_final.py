"""An upload's own page follows the dashboard's one rule of the final set (``uploads.final_of``): the default
final set is marked as such, and "Choose as final" is offered only on a valid set that is not the final one,
while the anonymization phase is open."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contest.models import AnonymizedSet, Dataset
from tests.web.conftest import anonymize_csv

DEFAULT = {"en": ">default<", "ja": ">既定<"}


def _page(client, contest, aset, lang):
    client.cookies["django_language"] = lang
    r = client.get(f"/c/{contest.slug}/team/uploads/{aset.pk}/")
    assert r.status_code == 200
    return r.content.decode()


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_default_final_set_is_marked_on_its_page_and_not_offered(generated, client_for, lang,
                                                                     django_capture_on_commit_callbacks):
    contest, alpha = generated, client_for("alpha1")
    ds = Dataset.objects.get(round__contest=contest, number=1, challenge=1)
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            alpha.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/",
                       {"file": SimpleUploadedFile("a.csv", anonymize_csv(ds, "A1-none"))})
    first, latest = AnonymizedSet.objects.filter(dataset=ds).order_by("seq")
    assert latest.status == AnonymizedSet.VALID and not latest.selected
    dash = alpha.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()["html"]
    assert f"#{latest.seq}</strong>" in dash                       # the dashboard's default final
    page = _page(alpha, contest, latest, lang)
    assert DEFAULT[lang] in page and f"/uploads/{latest.pk}/select/" not in page
    page = _page(alpha, contest, first, lang)
    assert DEFAULT[lang] not in page and f"/uploads/{first.pk}/select/" in page


def test_no_choose_button_once_the_phase_closed(closed_unobfuscated, client_for):
    contest, alpha = closed_unobfuscated, client_for("alpha1")
    for aset in AnonymizedSet.objects.filter(dataset__round__contest=contest, dataset__number=1):
        page = _page(alpha, contest, aset, "en")
        assert "/select/" not in page and "Choose as final" not in page
        assert aset.final and "frozen as final" in page
