"""A draft contest's pages exist for its organizers only (``permissions.can_view_contest``).

Every page of the site about one contest has the contest's ``slug`` in its address (``/c/<slug>/...``,
``/console/<slug>/...``), so one check before the view, here, keeps a draft from every page, present and
future, instead of one check in each view. Everyone else gets the site's 404 page, as for a contest that
does not exist. The API's contest list and contest answer ask the same permission (contest.api.views).

The check costs no database query on most requests (a page-cache hit makes none): the slugs of the drafts
are kept in the cache under the site's state stamp (contest.services.site_state), which every audited
action changes (creating a contest, opening one), and for at most :data:`DRAFT_SLUGS_SECONDS` against an
edit outside the services (the Django admin).
"""
from __future__ import annotations

from django.core.cache import cache
from django.http import Http404

from contest import permissions
from contest.models import Contest
from contest.services import site_state

#: How long the drafts' slugs are kept under one site stamp (seconds).
DRAFT_SLUGS_SECONDS = 10


def draft_slugs() -> frozenset[str]:
    """The slugs of the contests that are drafts now (kept per site stamp, see the module docstring)."""
    return cache.get_or_set(f"draft-slugs:{site_state.stamp()}",
                            lambda: frozenset(Contest.objects.filter(draft=True).values_list("slug", flat=True)),
                            DRAFT_SLUGS_SECONDS)


class DraftContestMiddleware:
    """Answers 404 to a page of a draft contest for anyone who does not organize it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        slug = view_kwargs.get("slug")
        if not slug or match is None or match.namespace != "web":
            return None
        if slug not in draft_slugs():
            return None
        contest = Contest.objects.filter(slug=slug, draft=True).first()
        if contest is None or permissions.can_view_contest(request.user, contest):
            return None
        raise Http404("no such contest")
