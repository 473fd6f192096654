"""The Django admin lists and shows every contest model (organizer tooling)."""
from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.html import escape

from contest.services import judge, uploads
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_every_model_has_a_working_admin(generated, client):
    from contest.models import Dataset
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                               content=anonymize_csv(ds), name="a.csv"))
    judge.close_anonymization(generated.rounds.get())
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    contest_models = [m for m in admin.site._registry if m._meta.app_label == "contest"]
    # every model of the app is registered or shown inline (a new model without an admin fails here, by name)
    inline = {i.model for a in admin.site._registry.values() for i in a.inlines}
    shown = {m.__name__ for m in contest_models} | {m.__name__ for m in inline}
    assert {m.__name__ for m in apps.get_app_config("contest").get_models()} == shown
    seen = 0
    for model in contest_models:
        info = (model._meta.app_label, model._meta.model_name)
        r = client.get(reverse("admin:{}_{}_changelist".format(*info)))
        assert r.status_code == 200, model
        obj = model.objects.first()
        if obj is None:
            assert "0 " in r.content.decode(), model  # the empty list says so
            continue
        seen += 1
        # the list shows the object, and its change page opens on it (not on an error page)
        assert escape(str(obj)) in r.content.decode() or f"/{obj.pk}/change/" in r.content.decode(), model
        r = client.get(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
        assert r.status_code == 200 and escape(str(obj)) in r.content.decode(), model
    assert seen >= 10  # the played round filled most models
