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


def _post_spec(mutate) -> tuple[int, str]:
    spec = contest_spec("bounded")
    spec["teams"] = []
    mutate(spec)
    r = _api(user("judge")).post("/api/contests/", {"yaml": yaml.safe_dump(spec)}, format="json")
    return r.status_code, r.content.decode()


def _params(**params):
    def mutate(spec):
        spec["contest"]["parameters"].update(params)
    return mutate


def _round(**fields):
    def mutate(spec):
        spec["rounds"][0].update(fields)
    return mutate


@pytest.mark.parametrize("mutate, named", [
    (_params(synthesizer="ppmtf", synthesizer_params={"options": {"batch_bytes": 10**15}}), "options.batch_bytes"),
    (_params(synthesizer="ppmtf", synthesizer_params={"options": {"gamma": "x"}}), "options.gamma"),
    (_params(synthesizer="ppmtf", synthesizer_params={"options": {"instant_minutes": 0.001}}),
     "options.instant_minutes"),
    (_params(synthesizer="ppmtf", synthesizer_params={"pool_days": 10**12}), "pool_days"),
    (_params(synthesizer="coloc", synthesizer_params={"options": {"theta": 10**7}}), "options.theta"),
    (_params(synthesizer="sglt", synthesizer_params={"options": {"k": 1000, "max_tries": 1000}}), "options.k"),
    (_params(synthesizer="sglt", synthesizer_params={"options": {"pd_candidates": 100_000}}), "options.pd_candidates"),
    (_round(ref_days=-1), "rounds[0].ref_days"),
    (_round(ref_days=10**6), "rounds[0].ref_days"),
    (_round(org_days=10**30), "rounds[0].org_days"),
    (_round(ref_days="x"), "rounds[0].ref_days"),
    (_round(phases={"anonymization": {"opens": "now", "closes": "now+1000000000000d"}}), "beyond the year 9999"),
    (_round(phases={"anonymization": {"opens": "now", "closes": "now+1e12d"}}), "is not ISO 8601"),
])
def test_unbounded_parameters_are_refused_with_their_name_never_500(make_contest, mutate, named):
    make_contest()
    t0 = time.monotonic()
    status, body = _post_spec(mutate)
    assert (status, named in body) == (400, True), body[:500]
    assert time.monotonic() - t0 < 5 and len(body) < 2000


def test_every_generation_option_of_every_method_has_a_check():
    """The schema names exactly each synthesizer's options, so none escapes its type and bounds."""
    import inspect

    from synth import coloc, sglt
    from synth.methods import SCHEMAS
    from synth.ppmtf_plus import Synthesizer
    ppmtf = set(inspect.signature(Synthesizer.__init__).parameters) - {
        "self", "model", "slots", "slot_start_minute", "slot_step_minutes"}
    assert set(SCHEMAS["ppmtf"]["options"]) == ppmtf
    assert set(SCHEMAS["sglt"]["options"]) == set(sglt.GENERATION_DEFAULTS)
    assert set(SCHEMAS["coloc"]["options"]) == set(coloc.GENERATION_DEFAULTS)
    for method in ("sglt", "coloc"):  # the defaults pass their own checks
        for key, value in {"sglt": sglt, "coloc": coloc}[method].GENERATION_DEFAULTS.items():
            assert SCHEMAS[method]["options"][key][0](value), (method, key)
