"""The site's routes plus a failing view under /api/ and one outside it (tests of the 500 answers)."""
from django.urls import path

from contest.urls import handler500  # noqa: F401  (the site's 500 answers)
from contest.urls import urlpatterns as site_urlpatterns


def boom(request):
    raise RuntimeError("a deliberate failure: the test of the 500 answer")


urlpatterns = [path("api/boom/", boom), path("boom/", boom), *site_urlpatterns]
