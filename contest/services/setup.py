"""Contest setup from a versioned YAML file (``manage.py create_contest FILE``).

Format (``version: 1``)::

    version: 1
    contest:
      slug: tokyo-2026            # unique
      name: TraceCup Tokyo 2026
      parameters:                 # any Contest parameter (SPEC 12); omitted ones keep defaults
        users_per_set: 2000
        time_zone: Asia/Tokyo
        judge_attacks: [I1-rand, I2-VisitProb, I3-HomeProb, T1-rand, T2-VisitProb, T3-HomeProb]
      organizers: [judge]         # usernames (created below under users)
    users:                        # accounts that are not team members (organizers)
      - {username: judge, password: secret, email: judge@example.org}
    rounds:
      - number: 1
        name: Preliminary
        weight: 0.1
        ref_days: 2
        org_days: 2
        phases:
          anonymization: {opens: "2026-06-01T10:00", closes: "2026-06-20T17:00"}
          attack:        {opens: "2026-06-21T10:00", closes: "2026-07-01T17:00"}
    teams:
      - number: 1
        name: Alpha
        members:
          - {username: alice, password: secret, role: captain}

Times are ISO 8601; a time without an offset is in the contest's time zone
(``parameters.time_zone``, default Asia/Tokyo). ``now``, ``now+3d``,
``now-2h``, ``now+30m`` are relative to the moment of import (for demos).
A member without ``password`` gets an unusable password (set it later).
Re-running with the same slug is an error (never a silent overwrite).
"""
from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, timedelta

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from contest import permissions
from contest.models import Contest, Membership, Phase, Round, Team
from contest.services import audit, parameters
from scoring.results import default_round_weight

SUPPORTED_VERSIONS = (1,)
_RELATIVE = re.compile(r"^now\s*(?:([+-])\s*(\d+(?:\.\d+)?)\s*([dhm]))?$")

#: The largest contest file read (bytes of UTF-8): a real one is a few kB (contest/example_contest.yaml).
MAX_CONTEST_FILE_BYTES = 256 * 1024
#: The longest error message about a contest file: messages quote values from the file, and an answer
#: must never echo an unbounded input back.
MAX_ERROR_CHARS = 500


class SetupError(ValueError):
    """A contest file that cannot be used; the message names the key and the problem (at most
    :data:`MAX_ERROR_CHARS` characters, whatever value it quotes)."""

    def __init__(self, message: str):
        message = str(message)
        if len(message) > MAX_ERROR_CHARS:
            message = message[:MAX_ERROR_CHARS - 20] + " ... (shortened)"
        super().__init__(message)


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses aliases (``*name``, also in ``<<: *name`` merges).

    An alias repeats a node without repeating its text: nested aliases expand a 654-byte document
    into gigabytes (the "billion laughs"; issue 25 measured 285 s and a 5.2 GB error body). A contest
    file has no need of them, so the composer refuses the first one before anything is expanded.
    """

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise SetupError(f"line {event.start_mark.line + 1}: YAML aliases (*{event.anchor[:40]}) are not "
                             "allowed in a contest file; write the value out")
        return super().compose_node(parent, index)


def parse_time(value, tz, now=None):
    now = now or timezone.now()
    if isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        m = _RELATIVE.match(text)
        if m:
            if not m.group(1):
                return now
            amount = float(m.group(2)) * (1 if m.group(1) == "+" else -1)
            unit = {"d": "days", "h": "hours", "m": "minutes"}[m.group(3)]
            try:
                return now + timedelta(**{unit: amount})
            except OverflowError:  # past year 9999 (Python's datetime): no contest runs that long
                raise SetupError(f"time {text[:60]!r} is beyond the year 9999") from None
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise SetupError(f"time {text!r} is not ISO 8601 (e.g. 2026-06-01T10:00) nor now[+-N(d|h|m)]") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt


def load_yaml(text: str) -> dict:
    """The contest file ``text`` as a dict: at most :data:`MAX_CONTEST_FILE_BYTES`, no YAML aliases."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONTEST_FILE_BYTES:
        raise SetupError(f"the contest file has {size} bytes; at most {MAX_CONTEST_FILE_BYTES} are read")
    try:
        spec = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader without aliases)
    except yaml.YAMLError as exc:
        raise SetupError(f"not valid YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise SetupError("the contest file must be a mapping with keys version, contest, rounds, teams")
    if spec.get("version") not in SUPPORTED_VERSIONS:
        raise SetupError(f"version: expected one of {SUPPORTED_VERSIONS}, got {spec.get('version')!r}")
    return spec


def _user(entry: dict, where: str, actor=None):
    User = get_user_model()
    if not isinstance(entry, dict) or not entry.get("username"):
        raise SetupError(f"{where}: each user needs a username")
    existing = User.objects.filter(username=entry["username"]).first()
    if existing is not None and entry.get("password"):
        decision = permissions.can_set_password_in_setup(actor, existing)
        if not decision:
            raise SetupError(f"{where}: {decision.reason}")
    user, created = User.objects.get_or_create(username=entry["username"],
                                               defaults={"email": entry.get("email", "")})
    if created or entry.get("password"):
        if entry.get("password"):
            user.set_password(str(entry["password"]))
        elif created:
            user.set_unusable_password()
        user.save()
    return user


@transaction.atomic
def create_contest(spec: dict, *, actor=None, now=None) -> Contest:
    """Create a contest with its rounds, phases, teams, members and organizers."""
    now = now or timezone.now()
    c = spec.get("contest") or {}
    if not c.get("slug") or not c.get("name"):
        raise SetupError("contest: slug and name are required")
    if Contest.objects.filter(slug=c["slug"]).exists():
        raise SetupError(f"contest: a contest with slug {c['slug']!r} already exists")
    params = dict(c.get("parameters") or {})
    params.pop("organizers", None)
    found = parameters.problems(params)  # the one check of contest parameters (console and API alike)
    if found:
        raise SetupError("; ".join(parameters.describe(p, "contest.parameters.") for p in found))
    tz = zoneinfo.ZoneInfo(params.get("time_zone", "Asia/Tokyo"))
    for key in ("freeze_at",):
        if params.get(key) is not None:
            params[key] = parse_time(params[key], tz, now)
    contest = Contest(slug=c["slug"], name=c["name"], description=c.get("description", ""), **params)
    contest.full_clean(exclude=["organizers"])
    contest.save()
    for entry in spec.get("users") or []:
        _user(entry, "users", actor)
    User = get_user_model()
    for name in c.get("organizers") or []:
        try:
            contest.organizers.add(User.objects.get(username=name))
        except User.DoesNotExist:
            raise SetupError(f"contest.organizers: no user {name!r} (list it under users)") from None
    rounds = spec.get("rounds") or []
    if not rounds:
        raise SetupError("rounds: at least one round is required")
    for i, r in enumerate(rounds):
        phases = {kind: (parse_time(w["opens"], tz, now), parse_time(w["closes"], tz, now))
                  for kind, w in (r.get("phases") or {}).items()}
        _create_round(contest, number=int(r.get("number", i + 1)), name=r.get("name") or f"Round {i + 1}",
                      weight=_weight(r, int(r.get("number", i + 1)), len(rounds), f"rounds[{i}]"),
                      ref_days=r.get("ref_days", 20), org_days=r.get("org_days", 20), phases=phases,
                      where=f"rounds[{i}]")
    for i, t in enumerate(spec.get("teams") or []):
        team = Team.objects.create(contest=contest, number=int(t.get("number", i + 1)), name=t["name"])
        for entry in t.get("members") or []:
            Membership.objects.create(user=_user(entry, f"teams[{i}].members", actor), team=team,
                                      role=entry.get("role", Membership.MEMBER))
    audit.record("create_contest", contest=contest, actor=actor, obj=contest, slug=contest.slug)
    return contest


#: The most reference (and original) days of a round. 2019 had 20 + 20; a day of 2000 users is 40000
#: trace rows per set and every team's sets are generated, scored and attacked in memory, so the
#: bound keeps one round's data (and the judge's attack matrices) within a worker's memory.
MAX_ROUND_DAYS = 100


def round_days(value, where: str) -> int:
    """``value`` as a round's number of reference or original days, 1..:data:`MAX_ROUND_DAYS`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ROUND_DAYS:
        raise SetupError(f"{where}: expected an integer in [1, {MAX_ROUND_DAYS}] (days of a round), got {value!r}")
    return value


def _create_round(contest, *, number, name, weight, ref_days, org_days, phases, where) -> Round:
    """A round and its phases ``{kind: (opens, closes)}`` (aware datetimes); ``where`` names it in errors."""
    ref_days, org_days = round_days(ref_days, f"{where}.ref_days"), round_days(org_days, f"{where}.org_days")
    for kind, (opens, closes) in phases.items():
        if kind not in (Phase.ANONYMIZATION, Phase.ATTACK):
            raise SetupError(f"{where}.phases: unknown phase {kind!r} (anonymization or attack)")
        if closes <= opens:
            raise SetupError(f"{where}.phases.{kind}: closes must be after opens")
    rnd = Round.objects.create(contest=contest, number=number, name=name, weight=weight, ref_days=ref_days,
                               org_days=org_days)
    for kind, (opens, closes) in phases.items():
        Phase.objects.create(round=rnd, kind=kind, opens_at=opens, closes_at=closes)
    return rnd


def _weight(r: dict, number: int, n_rounds: int | None, where: str) -> float:
    """A round's weight from its spec, or the 2019 rule's when it names none (``default_round_weight``)."""
    if r.get("weight") is None:
        return default_round_weight(number, n_rounds)
    try:
        weight = float(r["weight"])
    except (TypeError, ValueError):
        raise SetupError(f"{where}.weight: expected a number between 0 and 1, got {r['weight']!r}") from None
    if not 0.0 <= weight <= 1.0:
        raise SetupError(f"{where}.weight: expected a number between 0 and 1, got {weight}")
    return weight


def add_round(contest, *, name: str, weight: float | None, ref_days: int, org_days: int, phases: dict,
              actor=None) -> Round:
    """Append a round (the next number) with its phase windows ``{kind: (opens, closes)}``.

    ``weight`` None: the 2019 rule's for the round's number (a round added after
    the first is a final round: 0.9).
    """
    with transaction.atomic():
        number = (contest.rounds.order_by("-number").values_list("number", flat=True).first() or 0) + 1
        weight = _weight({"weight": weight}, number, None, f"round {number}")
        rnd = _create_round(contest, number=number, name=name, weight=weight, ref_days=int(ref_days),
                            org_days=int(org_days), phases=phases, where=f"round {number}")
        audit.record("add_round", contest=contest, actor=actor, obj=rnd, round=number, name=rnd.name)
    return rnd


def create_contest_from_yaml(text: str, *, actor=None, now=None) -> Contest:
    return create_contest(load_yaml(text), actor=actor, now=now)
