"""Contest setup from a versioned YAML file (``manage.py create_contest FILE``).

Format (``version: 1``)::

    version: 1
    contest:
      slug: tokyo-2026            # unique
      name: TraceCup Tokyo 2026
      parameters:                 # any Contest parameter (rules §12); omitted ones keep defaults
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

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from contest import permissions
from contest.models import Contest, Membership, Phase, Round, Team
from contest.services import audit
from contest.services.contest_file import (  # noqa: F401 (the format's names, where callers import them)
    MAX_CONTEST_FILE_BYTES,
    MAX_ERROR_CHARS,
    MAX_ROUND_DAYS,
    SUPPORTED_VERSIONS,
    SetupError,
    check,
    parse_time,
    read,
    time_zone,
)
from scoring.results import default_round_weight


def load_yaml(text: str) -> dict:
    """The contest file ``text`` as a dict, read within bounds (``contest.services.contest_file.read``)."""
    return read(text)


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
    """Create a contest with its rounds, phases, teams, members and organizers from a contest file's dict.

    The dict is checked whole first (``contest_file.check``: every problem with its path, nothing created);
    what only the database knows (a slug taken, an organizer without an account, an account the actor may
    not change) is refused after, in the same transaction.
    """
    now = now or timezone.now()
    found = check(spec, now)
    if found:
        raise SetupError(found)
    c = spec["contest"]
    if Contest.objects.filter(slug=c["slug"]).exists():
        raise SetupError([("contest.slug", f"a contest with slug {c['slug']!r} already exists")])
    params = dict(c.get("parameters") or {})
    tz = time_zone(spec)
    if params.get("freeze_at") is not None:
        params["freeze_at"] = parse_time(params["freeze_at"], tz, now)
    # A new contest is a draft, seen by its organizers only, until they open it (open_to_public), unless
    # its file says draft: false (the demo's, a contest set up ready to be seen).
    contest = Contest(slug=c["slug"], name=c["name"], description=c.get("description", ""),
                      draft=c.get("draft", True), **params)
    try:
        contest.full_clean(exclude=["organizers"])
    except ValidationError as exc:  # the schema's checks come first; this is the model's last word
        raise SetupError([(f"contest.{'parameters.' if f in params else ''}{f}", " ".join(m))
                          for f, m in exc.message_dict.items()]) from None
    contest.save()
    for i, entry in enumerate(spec.get("users") or []):
        _user(entry, f"users[{i}]", actor)
    User = get_user_model()
    for i, name in enumerate(c.get("organizers") or []):
        try:
            contest.organizers.add(User.objects.get(username=name))
        except User.DoesNotExist:
            raise SetupError([(f"contest.organizers[{i}]", f"no user {name!r} (list it under users)")]) from None
    rounds = spec["rounds"]
    for i, r in enumerate(rounds):
        number = r.get("number", i + 1)
        phases = {kind: (parse_time(w["opens"], tz, now), parse_time(w["closes"], tz, now))
                  for kind, w in (r.get("phases") or {}).items()}
        _create_round(contest, number=number, name=r.get("name") or f"Round {i + 1}",
                      weight=_weight(r, number, len(rounds), f"rounds[{i}]"),
                      ref_days=r.get("ref_days", 20), org_days=r.get("org_days", 20), phases=phases,
                      where=f"rounds[{i}]")
    for i, t in enumerate(spec.get("teams") or []):
        team = Team.objects.create(contest=contest, number=t.get("number", i + 1), name=t["name"])
        for k, entry in enumerate(t.get("members") or []):
            Membership.objects.create(user=_user(entry, f"teams[{i}].members[{k}]", actor), team=team,
                                      role=entry.get("role", Membership.MEMBER))
    audit.record("create_contest", contest=contest, actor=actor, obj=contest, slug=contest.slug)
    return contest


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


def open_to_public(contest: Contest, *, actor=None) -> bool:
    """Open a draft contest to the public: from now on its pages, rules and lists show to everyone.
    Opening is final (teams and visitors may rely on the pages). Returns False if it was open already."""
    if not Contest.objects.filter(pk=contest.pk, draft=True).update(draft=False):
        return False
    contest.draft = False
    audit.record("open_contest", contest=contest, actor=actor, obj=contest)
    return True


def create_contest_from_yaml(text: str, *, actor=None, now=None) -> Contest:
    return create_contest(load_yaml(text), actor=actor, now=now)
