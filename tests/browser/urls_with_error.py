"""The site's routes plus ``/boom/``, a view that fails: the browser tests look at the 500 page with it."""
from django.urls import path

from contest.urls import handler500  # noqa: F401  (the site's 500 answers)
from contest.urls import urlpatterns as site_urlpatterns


def boom(request):
    raise RuntimeError("a deliberate failure: the browser test of the 500 page")


urlpatterns = [path("boom/", boom), *site_urlpatterns]
