"""The API denies by default, and every one of its views names who may use it (issue 24, item 4).

DRF's ``DEFAULT_PERMISSION_CLASSES`` is ``contest.api.access.DenyUnlessNamed``: a view that names
no permission answers 403 to everybody. The first test fails on such a view before anyone sees the
403; the second shows the default really refuses (a superuser, through DRF's own dispatch).
"""
from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from contest.api import urls as api_urls
from contest.api.access import DenyUnlessNamed


def _api_views(patterns=api_urls.urlpatterns):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _api_views(p.url_patterns)
        elif isinstance(p, URLPattern) and getattr(p.callback, "view_class", None) is not None:
            if issubclass(p.callback.view_class, APIView):
                yield str(p.pattern), p.callback.view_class


def _names_permission(cls) -> bool:
    """Does ``cls`` (or one of its own bases, not DRF's APIView) say who may use it?"""
    for base in cls.__mro__:
        if base is APIView:
            return False
        if "get_permissions" in vars(base):  # chooses per method (e.g. reading public, posting organizers)
            return True
        if "permission_classes" in vars(base):
            return DenyUnlessNamed not in list(vars(base)["permission_classes"])
    return False


def test_every_api_view_names_its_permission():
    views = list(_api_views())
    assert len(views) > 40, "the walk over contest.api.urls found too few views"
    unnamed = sorted({f"{route} -> {cls.__name__}" for route, cls in views if not _names_permission(cls)})
    assert not unnamed, "API views that name no permission (they answer 403 to everybody):\n" + "\n".join(unnamed)


def test_the_default_permission_denies_everybody(django_user_model):
    """A view naming nothing is refused, even to an active superuser: default deny, not default allow."""
    class Forgotten(APIView):
        def get(self, request):
            return Response({"secret": 1})

    assert not _names_permission(Forgotten)
    root = django_user_model(username="root", is_superuser=True, is_staff=True, is_active=True)
    request = APIRequestFactory().get("/api/forgotten/")
    force_authenticate(request, user=root)
    response = Forgotten.as_view()(request)
    assert response.status_code == 403
    assert "names no permission" in str(response.data)


@pytest.mark.django_db
def test_public_reads_still_answer_anonymous(client):
    """The views that name ``AllowAny`` (their objects are checked by contest.permissions) still serve."""
    assert client.get("/api/contests/").status_code == 200
    assert client.get("/api/schema/").status_code == 200
