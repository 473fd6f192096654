"""Hostile organizer input (issue 25 items 4 and 5): contest files and synthesizer parameters that would
run a machine out of memory or time, or answer 500, are refused at once with a short, specific answer."""
from __future__ import annotations

import time

import pytest
import yaml
from rest_framework.test import APIClient

from tests.contest.conftest import contest_spec, user

pytestmark = pytest.mark.django_db


def _api(u):
    api = APIClient()
    api.force_authenticate(u)
    return api


def alias_bomb(levels: int) -> str:
    """The "billion laughs": each level lists the previous one nine times (9**levels strings)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, levels + 1):
        lines.append(f"a{k}: &a{k} [" + ",".join([f"*a{k - 1}"] * 9) + "]")
    lines.append(f"version: *a{levels}")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_before_it_expands(make_contest):
    make_contest()
    bomb = alias_bomb(6)  # 531441 strings once expanded; the 654-byte one of the issue had 9 levels
    assert len(bomb) < 700
    t0 = time.monotonic()
    r = _api(user("judge")).post("/api/contests/", {"yaml": bomb}, format="json")
    assert time.monotonic() - t0 < 5
    assert r.status_code == 400 and len(r.content) < 2000, r.content[:300]
    assert "aliases (*a0) are not allowed" in r.content.decode()
    merge = "base: &base {slug: x}\ncontest:\n  <<: *base\nversion: 1\n"
    r = _api(user("judge")).post("/api/contests/", {"yaml": merge}, format="json")
    assert r.status_code == 400 and "line 3: YAML aliases (*base)" in r.content.decode()


def test_error_answers_never_echo_an_unbounded_value(make_contest):
    make_contest()
    spec = contest_spec("echo")
    spec["version"] = "v" * 200_000
    r = _api(user("judge")).post("/api/contests/", {"yaml": yaml.safe_dump(spec)}, format="json")
    assert r.status_code == 400 and len(r.content) < 2000, len(r.content)
    assert "version: expected one of" in r.content.decode()
    r = _api(user("judge")).post("/api/contests/", {"yaml": "x: " + "y" * 300_000}, format="json")
    assert r.status_code == 400 and len(r.content) < 2000 and "at most 262144 are read" in r.content.decode()


def test_a_contest_file_without_aliases_still_loads(make_contest):
    make_contest()
    spec = contest_spec("plain")
    spec["teams"] = []  # the accounts of make_contest's teams exist already
    r = _api(user("judge")).post("/api/contests/", {"yaml": yaml.safe_dump(spec)}, format="json")
    assert r.status_code == 201, r.content[:500]
