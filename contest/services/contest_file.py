"""The contest file's one schema: read within bounds, checked at every level, costed before it is accepted.

A contest file (``contest/example_contest.yaml``; the format is in
``contest.services.setup`` and docs/rules.md, "The contest file") reaches the
platform from the console, the API and ``manage.py create_contest``; the console's
form and ``simulate_contest`` build the same dict. Whatever the source:

1. :func:`read` turns the text into a dict within bounds: at most
   :data:`MAX_CONTEST_FILE_BYTES`, no aliases, nesting at most :data:`MAX_DEPTH`
   levels and at most :data:`MAX_NODES` nodes (refused while composing, before a deep or
   large structure is built), no key
   twice in a mapping, integers of at most :data:`MAX_INT_DIGITS` digits (a longer
   one becomes a value no check accepts, so its field is named), times kept as text.
2. :func:`check` refuses every problem of the dict with its path
   (``rounds[1].phases.attack.closes``): unknown keys (with the nearest known key),
   types, ranges, text lengths, slugs and usernames, dates and complete phase
   windows, unique round numbers, team numbers, team names and usernames, the
   contest parameters (``contest.services.parameters``) and the memory a worker
   would need for one set (``contest.services.capacity``).

Every problem is a :class:`SetupError` carrying ``issues`` ``[{"field", "message"}]``
(the API's issue shape), in the language of the request (the messages are in the
catalog of ``contest/web/locale``).
"""
from __future__ import annotations

import difflib
import re
import zoneinfo
from datetime import datetime, timedelta

import yaml
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from contest.models import Contest
from contest.services import capacity, parameters
from contest.services.errors import ServiceError

#: The largest contest file read (bytes of UTF-8): a real one is a few kB (contest/example_contest.yaml).
MAX_CONTEST_FILE_BYTES = 256 * 1024
#: The longest error message about a contest file: messages quote values from the file, and an answer
#: must never echo an unbounded input back.
MAX_ERROR_CHARS = 500
#: The most issues one answer lists (a file of 10,000 bad teams gets the first ones).
MAX_ISSUES = 20
#: The deepest nesting read: the format's deepest value (contest.parameters.synthesizer_params.options.X,
#: a list there) is 7 levels down; Python's own recursion would end near 1,000.
MAX_DEPTH = 12
#: The most nodes read (keys, values, lists and mappings): the reader is pure Python at about 20 us a node, so
#: a 256 KB file of 125,000 one-digit entries would take 3 s; a 200-team file with 5 members each has 9,000.
MAX_NODES = 20_000
#: The longest integer read (digits): the largest the format takes is a seed below 2**63 (19 digits); Python
#: refuses to convert more than 4,300 and a 500 would follow.
MAX_INT_DIGITS = 30
#: The most entries of each list of the file.
MAX_ROUNDS, MAX_TEAMS, MAX_MEMBERS, MAX_USERS = 20, 500, 50, 1000
#: The longest texts (characters): the model's fields where it has a bound.
MAX_SLUG, MAX_NAME, MAX_ROUND_NAME, MAX_TEAM_NAME, MAX_DESCRIPTION = 50, 200, 100, 100, 10_000
MAX_USERNAME, MAX_PASSWORD, MAX_EMAIL, MAX_TIME = 150, 128, 254, 64
SUPPORTED_VERSIONS = (1,)
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+\Z")
_USERNAME = re.compile(r"^[\w.@+-]+\Z")
_FIELD = re.compile(r"^([\w.\[\]-]+): (.*)$", re.S)


class SetupError(ServiceError, ValueError):
    """A contest file that cannot be used: ``issues`` ``[{"field", "message"}]`` (``field`` the path, "" for the
    whole file); ``str()`` joins them as ``field: message; ...``, at most :data:`MAX_ERROR_CHARS` characters.

    Built from a list of ``(field, message)`` or from one text, whose leading ``path: `` becomes its field.
    """

    code = "invalid_contest_file"

    def __init__(self, problems):
        if isinstance(problems, str):
            m = _FIELD.match(problems)
            problems = [(m.group(1), m.group(2)) if m else ("", problems)]
        issues = [{"field": f, "message": _shorten(str(msg), 300)} for f, msg in list(problems)[:MAX_ISSUES]]
        text = "; ".join(f"{i['field']}: {i['message']}" if i["field"] else i["message"] for i in issues)
        super().__init__(_shorten(text, MAX_ERROR_CHARS), issues=issues)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 16] + " ... (shortened)"


class Unreadable:
    """A value the reader would not build (an integer of thousands of digits): every check refuses it, and its
    field's error says what it was."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return self.what


def show(value) -> str:
    """``value`` as an error quotes it: short whatever its size (a 10,000-character name, a 5,000-digit integer)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value)} characters)"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        digits = len(str(abs(value))) if abs(value) < 10 ** 60 else None
        return repr(value) if digits is not None and digits <= 40 else _("an integer of more than 40 digits")
    if isinstance(value, dict):
        return _("a mapping")
    if isinstance(value, (list, tuple, set)):
        return _("a list")
    return _shorten(repr(value), 60)


# ----------------------------------------------------------------------------- reading
def _resolvers() -> dict:
    """SafeLoader's implicit types without timestamps: a time stays text, so a bad date (``2026-13-45``) is
    refused by the schema with its field instead of by the reader."""
    return {first: [(tag, rx) for tag, rx in entries if tag != "tag:yaml.org,2002:timestamp"]
            for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()}


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the contest file's bounds (see the module's docstring).

    Aliases (``*name``, also in ``<<: *name`` merges) repeat a node without repeating its text: nested ones
    expand a 654-byte document into gigabytes (the "billion laughs"), so the first is refused before anything
    is expanded. The composer recurses once per level, so the depth is counted there and a document nested
    20,000 levels deep stops at level :data:`MAX_DEPTH`.
    """

    yaml_implicit_resolvers = _resolvers()

    def __init__(self, stream):
        super().__init__(stream)
        self._path: list = []
        self._nodes = 0

    def _where(self) -> str:
        out = ""
        for step in self._path:
            if isinstance(step, int):
                out += f"[{step}]"
            elif isinstance(step, yaml.ScalarNode):
                out += ("." if out else "") + _shorten(str(step.value), 40)
        return _shorten(out, 200)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise SetupError([(self._where(), _("line %(line)s: YAML aliases (*%(name)s) are not allowed in a "
                                                "contest file; write the value out")
                               % {"line": event.start_mark.line + 1, "name": event.anchor[:40]})])
        self._path.append(index)
        self._nodes += 1
        try:
            if self._nodes > MAX_NODES:
                raise SetupError([(self._where(), _("line %(line)s: more than %(n)s keys and values in the file")
                                   % {"line": event.start_mark.line + 1, "n": MAX_NODES})])
            if len(self._path) > MAX_DEPTH:
                raise SetupError([(self._where(), _("line %(line)s: nested deeper than %(n)s levels")
                                   % {"line": event.start_mark.line + 1, "n": MAX_DEPTH})])
            node = super().compose_node(parent, index)
            if isinstance(node, yaml.MappingNode):
                self._refuse_repeated_keys(node)
        finally:
            self._path.pop()
        return node

    def _refuse_repeated_keys(self, node) -> None:
        seen = set()
        for key, _value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    self._path.append(key)
                    raise SetupError([(self._where(), _("line %(line)s: this key appears twice in its mapping")
                                       % {"line": key.start_mark.line + 1})])
                seen.add(key.value)

    def construct_yaml_int(self, node):
        text = str(self.construct_scalar(node))
        digits = sum(ch.isalnum() for ch in text)
        if digits > MAX_INT_DIGITS:
            return Unreadable(_("an integer of %(n)s digits") % {"n": digits})
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def read(text: str) -> dict:
    """The contest file ``text`` (YAML or JSON) as a dict, read within the bounds of the module's docstring;
    the version is checked here, the rest by :func:`check`."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONTEST_FILE_BYTES:
        raise SetupError(_("the contest file has %(size)s bytes; at most %(max)s are read")
                         % {"size": size, "max": MAX_CONTEST_FILE_BYTES})
    try:
        spec = yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader without aliases, bounded)
    except yaml.YAMLError as exc:
        raise SetupError(_("not valid YAML: %(reason)s") % {"reason": exc}) from None
    if not isinstance(spec, dict):
        raise SetupError(_("the contest file must be a mapping with keys version, contest, rounds, teams"))
    _version(spec)
    return spec


def _version(spec: dict) -> None:
    """A file read from text names its version (a dict built in code, the console's, may leave it out)."""
    out = Issues()
    _version_field(spec.get("version"), "version", out)
    if out:
        raise SetupError(out)


def _version_field(value, path, out) -> None:
    if isinstance(value, bool) or value not in SUPPORTED_VERSIONS:
        out.add(path, _("expected one of %(choices)s, got %(value)s")
                % {"choices": SUPPORTED_VERSIONS, "value": show(value)})


# ----------------------------------------------------------------------------- checking
def at(path: str, key) -> str:
    """The path of ``key`` under ``path``: ``contest.slug``, ``rounds[1]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


class Issues(list):
    """``(path, message)`` of every problem found so far."""

    def add(self, path: str, message: str) -> None:
        self.append((path, message))


def unknown_key(key, known) -> str:
    """The error of an unknown key, with the nearest known key when one is close (``ref_dayz``: ``ref_days``)."""
    near = difflib.get_close_matches(str(key)[:100], [str(k) for k in known], n=1, cutoff=0.6)
    if near:
        return _("unknown key %(key)s; did you mean %(hint)s?") % {"key": show(key), "hint": near[0]}
    return _("unknown key %(key)s; the known keys are %(known)s") % {"key": show(key), "known": ", ".join(known)}


def mapping(value, path: str, out: Issues, fields: dict, required=()) -> dict | None:
    """``value`` checked as a mapping of ``fields`` (key -> ``check(value, path, out)``); None if not a mapping."""
    if not isinstance(value, dict):
        out.add(path, _("expected a mapping (key: value), got %(value)s") % {"value": show(value)})
        return None
    for key in required:
        if key not in value:
            out.add(at(path, key), _("required, and missing"))
    for key, item in value.items():
        if key not in fields:
            out.add(at(path, key), unknown_key(key, list(fields)))
        elif fields[key] is not None:
            fields[key](item, at(path, key), out)
    return value


def sequence(value, path: str, out: Issues, item, most: int, least: int = 0) -> list:
    """``value`` checked as a list of ``least``..``most`` entries, each by ``item(entry, path, out)``."""
    if not isinstance(value, list):
        out.add(path, _("expected a list, got %(value)s") % {"value": show(value)})
        return []
    if not least <= len(value) <= most:
        out.add(path, _("expected %(least)s to %(most)s entries, got %(n)s")
                % {"least": least, "most": most, "n": len(value)})
        return []
    for i, entry in enumerate(value):
        item(entry, at(path, i), out)
    return value


def text(most: int, *, least: int = 1, pattern: re.Pattern | None = None, what: str = ""):
    """A check of a text of ``least``..``most`` characters (matching ``pattern``, described as ``what``)."""
    def check(value, path, out):
        if not isinstance(value, str):
            out.add(path, _("expected text, got %(value)s") % {"value": show(value)})
        elif not least <= len(value.strip() if least else value) <= most:
            out.add(path, _("expected text of %(least)s to %(most)s characters, got %(n)s")
                    % {"least": least, "most": most, "n": len(value)})
        elif pattern is not None and not pattern.match(value):
            out.add(path, _("expected %(what)s, got %(value)s") % {"what": what, "value": show(value)})
    return check


def integer(lo: int, hi: int):
    def check(value, path, out):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            out.add(path, _("expected an integer in [%(lo)s, %(hi)s], got %(value)s")
                    % {"lo": lo, "hi": hi, "value": show(value)})
    return check


def number(lo: float, hi: float):
    def check(value, path, out):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            out.add(path, _("expected a number in [%(lo)s, %(hi)s], got %(value)s")
                    % {"lo": lo, "hi": hi, "value": show(value)})
    return check


def boolean(value, path, out) -> None:
    if not isinstance(value, bool):
        out.add(path, _("expected true or false, got %(value)s") % {"value": show(value)})


def choice(*values: str):
    def check(value, path, out):
        if not isinstance(value, str) or value not in values:
            out.add(path, _("expected one of %(choices)s, got %(value)s")
                    % {"choices": ", ".join(values), "value": show(value)})
    return check


def email(value, path, out) -> None:
    text(MAX_EMAIL, least=0)(value, path, out)
    if isinstance(value, str) and value and len(value) <= MAX_EMAIL:
        try:
            validate_email(value)
        except ValidationError:
            out.add(path, _("expected an e-mail address, got %(value)s") % {"value": show(value)})


def unique(entries: list[tuple[str, object]], out: Issues) -> None:
    """Refuse each value of ``entries`` ``[(path, value)]`` given again after its first path."""
    first: dict = {}
    for path, value in entries:
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            continue
        if value in first:
            out.add(path, _("%(value)s is given twice (first at %(first)s); each must be unique")
                    % {"value": show(value), "first": first[value]})
        else:
            first[value] = path


def time_zone(spec: dict) -> zoneinfo.ZoneInfo:
    """The contest's time zone, in which times without an offset are read (Asia/Tokyo when it names none or
    a bad one, which its own check refuses)."""
    params = (spec.get("contest") or {}).get("parameters") if isinstance(spec.get("contest"), dict) else None
    name = params.get("time_zone") if isinstance(params, dict) else None
    try:
        return zoneinfo.ZoneInfo(name if isinstance(name, str) and 0 < len(name) < 100 else "Asia/Tokyo")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("Asia/Tokyo")


# ----------------------------------------------------------------------------- times
_RELATIVE = re.compile(r"^now\s*(?:([+-])\s*(\d+(?:\.\d+)?)\s*([dhm]))?$")


def parse_time(value, tz, now=None):
    """A contest time: an aware ``datetime`` or ISO 8601 text (without an offset: in ``tz``), or ``now``,
    ``now+3d``, ``now-2h``, ``now+30m`` relative to ``now``; :class:`SetupError` otherwise."""
    now = now or timezone.now()
    if isinstance(value, datetime):
        dt = value
    else:
        text_ = str(value).strip()[:MAX_TIME + 1]
        m = _RELATIVE.match(text_)
        if m:
            if not m.group(1):
                return now
            amount = float(m.group(2)) * (1 if m.group(1) == "+" else -1)
            unit = {"d": "days", "h": "hours", "m": "minutes"}[m.group(3)]
            try:
                return now + timedelta(**{unit: amount})
            except OverflowError:  # past year 9999 (Python's datetime): no contest runs that long
                raise SetupError(_("time %(value)s is beyond the year 9999") % {"value": show(text_)}) from None
        try:
            dt = datetime.fromisoformat(text_)
        except ValueError:
            raise SetupError(_("time %(value)s is not ISO 8601 (e.g. 2026-06-01T10:00) nor now[+-N(d|h|m)]")
                             % {"value": show(text_)}) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt


def _time(value, path: str, out: Issues, tz, now):
    """``value`` as an aware datetime, or None with the problem added at ``path``."""
    if not isinstance(value, (str, datetime)) or (isinstance(value, str) and len(value) > MAX_TIME):
        out.add(path, _("expected a date and time (e.g. 2026-06-01T10:00 or now+3d), got %(value)s")
                % {"value": show(value)})
        return None
    try:
        return parse_time(value, tz, now)
    except SetupError as exc:
        out.add(path, exc.issues[0]["message"])
        return None


# ----------------------------------------------------------------------------- the format
#: The most reference (and original) days of a round. 2019 had 20 + 20; a day of 2000 users is 40000
#: trace rows per set and every team's sets are generated, scored and attacked in memory, so the
#: bound keeps one round's data (and the judge's attack matrices) within a worker's memory.
MAX_ROUND_DAYS = 100
ROLES = ("captain", "member")
PHASES = ("anonymization", "attack")
_ACCOUNT = {"username": text(MAX_USERNAME, pattern=_USERNAME, what=gettext_lazy("a username (letters, digits and @.+-_)")),
            "password": text(MAX_PASSWORD), "email": email}


def check(spec: dict, now=None) -> Issues:
    """Every problem of the contest file ``spec`` (a dict as :func:`read` gives it) as ``(path, message)``;
    empty when the contest can be created. The contest parameters are checked by
    ``contest.services.parameters`` and the memory of one set by ``contest.services.capacity``."""
    out = Issues()
    tz = time_zone(spec)
    accounts: list[tuple[str, object]] = []

    def account(entry, path, out_, member=False):
        fields = {**_ACCOUNT, **({"role": choice(*ROLES)} if member else {})}
        if mapping(entry, path, out_, fields, required=("username",)) is not None:
            accounts.append((at(path, "username"), entry.get("username")))

    mapping(spec, "", out, {
        "version": _version_field, "contest": _contest, "users": lambda v, p, o: sequence(v, p, o, account, MAX_USERS),
        "rounds": lambda v, p, o: _rounds(v, p, o, tz, now),
        "teams": lambda v, p, o: _teams(v, p, o, lambda e, p2, o2: account(e, p2, o2, member=True)),
    }, required=("contest", "rounds"))
    unique(accounts, out)
    if not out:
        out += _capacity(spec)
    return out


def _contest(value, path, out) -> None:
    c = mapping(value, path, out, {
        "slug": text(MAX_SLUG, pattern=_SLUG, what=gettext_lazy("a slug (letters, digits, - and _)")),
        "name": text(MAX_NAME), "description": text(MAX_DESCRIPTION, least=0),
        "draft": boolean,
        "parameters": _parameters,
        "organizers": lambda v, p, o: sequence(v, p, o, _ACCOUNT["username"], MAX_USERS),
    }, required=("slug", "name"))
    if c is not None and isinstance(c.get("organizers"), list):
        unique([(at(at(path, "organizers"), i), u) for i, u in enumerate(c["organizers"])], out)


def _parameters(value, path, out) -> None:
    """The contest parameters through their one check (``contest.services.parameters.problems``), each
    problem at ``contest.parameters.<name>``; an unknown name gets the nearest known one."""
    if not isinstance(value, dict):
        out.add(path, _("expected a mapping (key: value), got %(value)s") % {"value": show(value)})
        return
    for field, bad, expected in parameters.problems(value):
        where = at(path, field)
        known = re.match(r"^an? (?:known|option).*\(([^()]*)\)$", expected, re.S)
        if field not in parameters.PARAMETERS and "." not in field:
            out.add(where, unknown_key(field, list(parameters.PARAMETERS)))
        elif known:
            out.add(where, unknown_key(field.rsplit(".", 1)[-1], known.group(1).split(", ")))
        else:
            out.add(where, _("expected %(what)s, got %(value)s") % {"what": expected, "value": show(bad)})
    if "freeze_at" in value and value["freeze_at"] is not None:
        _time(value["freeze_at"], at(path, "freeze_at"), out, zoneinfo.ZoneInfo("UTC"), None)


def _rounds(value, path, out, tz, now) -> None:
    rounds = sequence(value, path, out, lambda r, p, o: _round(r, p, o, tz, now), MAX_ROUNDS, least=1)
    unique([(at(at(path, i), "number"), r.get("number", i + 1)) for i, r in enumerate(rounds)
            if isinstance(r, dict)], out)


def _round(value, path, out, tz, now) -> None:
    days = integer(1, MAX_ROUND_DAYS)
    mapping(value, path, out, {
        "number": integer(1, 1000), "name": text(MAX_ROUND_NAME), "weight": number(0, 1),
        "ref_days": days, "org_days": days, "phases": lambda v, p, o: _phases(v, p, o, tz, now)})


def _phases(value, path, out, tz, now) -> None:
    def window(w, p, o):
        if mapping(w, p, o, {"opens": None, "closes": None}, required=("opens", "closes")) is None:
            return
        opens = _time(w["opens"], at(p, "opens"), o, tz, now) if "opens" in w else None
        closes = _time(w["closes"], at(p, "closes"), o, tz, now) if "closes" in w else None
        if opens is not None and closes is not None and closes <= opens:
            o.add(at(p, "closes"), _("closes must be after opens"))
    mapping(value, path, out, dict.fromkeys(PHASES, window))


def _teams(value, path, out, member) -> None:
    teams = sequence(value, path, out, lambda t, p, o: mapping(t, p, o, {
        "number": integer(1, 10_000), "name": text(MAX_TEAM_NAME),
        "members": lambda v, p2, o2: sequence(v, p2, o2, member, MAX_MEMBERS)}, required=("name",)), MAX_TEAMS)
    teams = [(i, t) for i, t in enumerate(teams) if isinstance(t, dict)]
    unique([(at(at(path, i), "number"), t.get("number", i + 1)) for i, t in teams], out)
    unique([(at(at(path, i), "name"), t.get("name").strip().casefold() if isinstance(t.get("name"), str) else None)
            for i, t in teams], out)


def _capacity(spec: dict) -> Issues:
    """The memory one worker needs for a set of each round (``contest.services.capacity``), refused with the
    figure when past its bound; the problem is named at the round."""
    params = spec["contest"].get("parameters") or {}

    def param(name):
        return params.get(name, Contest._meta.get_field(name).get_default())

    out = Issues()
    users, slots = param("users_per_set"), param("slots_per_day")
    regions, method = param("grid_nx") * param("grid_ny"), param("synthesizer")
    for i, r in enumerate(spec["rounds"]):
        days = r.get("ref_days", 20) + r.get("org_days", 20)
        est = capacity.estimate(users, slots, days, regions, method)
        if est.peak_mb > capacity.WORKER_BOUND_MB:
            out.add(f"rounds[{i}]", _(
                "a set of this round needs about %(need)s in one worker process to generate and score "
                "(%(users)s users x %(slots)s slots x %(days)s days = %(events)s events, %(regions)s regions); "
                "the bound is %(bound)s: fewer users, slots, days or regions")
                % {"need": capacity.figure(est.peak_mb), "users": users, "slots": slots, "days": days,
                   "events": f"{est.events:,}", "regions": regions, "bound": capacity.figure(capacity.WORKER_BOUND_MB)})
    return out
