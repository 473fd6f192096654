"""A draft contest's pages exist for its organizers only (``permissions.can_view_contest``).

Every page of the site about one contest has the contest's ``slug`` in its address (``/c/<slug>/...``,
``/console/<slug>/...``), so one check before the view, here, keeps a draft from every page, present and
future, instead of one check in each view. Everyone else gets the site's 404 page, as for a contest that
does not exist. The API's contest list and contest answer ask the same permission (contest.api.views).
"""
from __future__ import annotations

from django.http import Http404

from contest import permissions
from contest.models import Contest


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
        contest = Contest.objects.filter(slug=slug, draft=True).first()
        if contest is None or permissions.can_view_contest(request.user, contest):
            return None
        raise Http404("no such contest")
