"""The permission matrix through the real URLs: every role x object x action x phase, HTML and API.

``test_permissions.py`` asks ``contest.permissions`` directly; this test asks the views, so a rule
written inline in a view (or a view that forgets to ask) shows up as a mismatch with the matrix.
"""
from __future__ import annotations

import io

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from contest.models import AnonymizedSet, Attack
from contest.services import data, results
from tests.contest.conftest import anonymize_csv
from tests.contest.test_permissions import MATRIX_CLOSED, MATRIX_OPEN, ROLES, STAFF, TEAMS, _role_user, _world

pytestmark = pytest.mark.django_db

ROUND_FILES = {("round", "info_region"): TEAMS, ("round", "info_time"): TEAMS, ("round", "model"): STAFF}
SLUG = "tc"


def _clients(role):
    """(HTML client, API client) of ``role``; the API one authenticates with the user's token."""
    user = _role_user(role)
    html, api = Client(), Client()
    if role != "anonymous":
        html.force_login(user)
        api.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.get_or_create(user=user)[0].key}"
    return html, api


def _requests(obj_name, action, w, contest):
    """[(which client, method, url, data)] that perform ``action`` on ``obj_name`` through the site."""
    obj = w.get(obj_name)
    if obj_name == "round":
        rnd = contest.rounds.get()
        fid = {"info_region": rnd.info_region_id, "info_time": rnd.info_time_id, "model": rnd.model_file_id}[action]
        if fid is None:
            return []  # the built-in city synthesizer keeps no model file
        urls = [("html", "get", f"/files/{fid}/", None), ("api", "get", f"/api/files/{fid}/", None)]
        if action != "model":
            urls.append(("api", "get", f"/api/rounds/{rnd.pk}/{action}.csv", None))
        return urls
    if obj_name == "contest":
        if action == "results":
            return [("api", "get", f"/api/contests/{SLUG}/results/?live=1", None),
                    ("html", "get", f"/c/{SLUG}/leaderboard/?live=1", None)]
        return [("html", "get", f"/console/{SLUG}/", None), ("api", "post", f"/api/contests/{SLUG}/snapshot/", {})]
    if obj_name.endswith("_ds"):
        if action == "upload":
            csv = anonymize_csv(obj)
            return [("html", "post", f"/c/{SLUG}/team/datasets/{obj.pk}/upload/", {"file": csv}),
                    ("api", "post", f"/api/datasets/{obj.pk}/anonymized-sets/", {"file": csv})]
        fid = getattr(obj, f"{action}_id")
        return [("html", "get", f"/files/{fid}/", None), ("api", "get", f"/api/datasets/{obj.pk}/{action}/", None),
                ("api", "get", f"/api/files/{fid}/", None)]
    if obj_name.endswith("_ps"):
        if action == "attack":
            etable = data.etable_csv(list(range(1, contest.users_per_set + 1)))
            etraces = b"reg_id\n1\n"        # stored, then rejected by its validation: stored is what counts here
            return [("html", "post", f"/c/{SLUG}/team/targets/{obj.pk}/attack/", {"file": etable, "kind": "etable"}),
                    ("api", "post", f"/api/public-sets/{obj.pk}/attacks/", {"file": etraces, "kind": "etraces"})]
        fid = getattr(obj, f"{action}_id")
        return [("html", "get", f"/files/{fid}/", None), ("api", "get", f"/api/public-sets/{obj.pk}/{action}/", None),
                ("api", "get", f"/api/files/{fid}/", None)]
    if obj_name.endswith("_aset"):
        return [("html", "get", f"/files/{obj.file_id}/", None), ("api", "get", f"/api/anonymized-sets/{obj.pk}/", None),
                ("api", "get", f"/api/files/{obj.file_id}/", None)]
    if obj_name.endswith("_attack"):
        return [("html", "get", f"/files/{obj.file_id}/", None), ("api", "get", f"/api/attacks/{obj.pk}/", None),
                ("api", "get", f"/api/files/{obj.file_id}/", None)]
    if obj_name == "judge_out":
        return [("html", "get", f"/files/{obj.output_id}/", None), ("api", "get", f"/api/files/{obj.output_id}/", None)]
    raise AssertionError(obj_name)


def _allowed(response, created: bool | None = None) -> bool:
    """Did the site do it? An upload: was it stored. A page or file: 2xx (not the embargo page), or a
    redirect that is not to the login page; refusals are 401/403/404/login."""
    if created is not None:
        return created
    if any(t.name == "web/embargo.html" for t in response.templates or []):
        return False
    if response.status_code == 302:
        return not response["Location"].startswith("/login/")
    if response.status_code in (401, 403, 404):
        return False
    assert response.status_code < 300, (response.status_code, response.content[:300])
    return True


def _call(client, method, url, payload):
    if method == "get":
        return client.get(url)
    files = {k: io.BytesIO(v) if isinstance(v, bytes) else v for k, v in (payload or {}).items()}
    return client.post(url, files, HTTP_ACCEPT="application/json")


@pytest.mark.slow
@pytest.mark.parametrize("closed", [False, True], ids=["anonymization-open", "after-close"])
def test_every_role_object_action_through_the_real_urls(generated, closed, django_capture_on_commit_callbacks):
    w = _world(generated, closed)
    results.snapshot(generated)            # computed, not published: the organizers' preview of the results
    # contest.permissions says who may upload to a dataset; the phase says when: after the close
    # nobody's anonymized upload is stored.
    phase_rule = {("own_ds", "upload"): set()} if closed else {}
    matrix = {**(MATRIX_CLOSED if closed else MATRIX_OPEN), **ROUND_FILES, **phase_rule}
    mismatches, checked = [], 0
    clients = {role: _clients(role) for role in ROLES}
    for (obj_name, action), allowed in matrix.items():
        for role in ROLES:
            html, api = clients[role]
            for which, method, url, payload in _requests(obj_name, action, w, generated):
                uploads_before = AnonymizedSet.objects.count() + Attack.objects.count()
                with django_capture_on_commit_callbacks(execute=True):
                    response = _call(html if which == "html" else api, method, url, payload)
                stored = AnonymizedSet.objects.count() + Attack.objects.count() > uploads_before
                got = _allowed(response, stored if action in ("upload", "attack") else None)
                checked += 1
                if got != (role in allowed):
                    mismatches.append(f"{role} {action} {obj_name} via {which} {method.upper()} {url}: "
                                      f"{'allowed' if got else 'refused'}, expected "
                                      f"{'allowed' if role in allowed else 'refused'}")
    assert checked > 2 * len(matrix) * len(ROLES)
    assert not mismatches, "\n".join(mismatches)
