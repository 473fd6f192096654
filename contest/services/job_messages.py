"""What a job says on its row (``Job.message``), stored in English and shown in the reader's language.

A job's message is written by a worker, which has no reader's language, and read later on the console,
the System page and the job's own page in English or Japanese. So every message a job writes is one of
:data:`TEMPLATES` (English, ``%(name)s`` placeholders, marked for the catalog): :func:`say` fills one in
for the row, and :func:`shown` finds the template a stored message was made from and gives it in the
active language with the same values. A message made from no template (an old row) is shown as it is.

This module imports nothing of the project, so every service and ``contest.services.jobs`` can import it.
"""
from __future__ import annotations

import re
from functools import lru_cache

from django.utils.translation import gettext, gettext_noop

#: Every message a job writes on its row (English; ``%(name)s`` stands for a value shown as it is).
TEMPLATES: tuple[str, ...] = (
    # contest.services.jobs: the end of any job, its failures and retries
    gettext_noop("done"),
    gettext_noop("failed: %(reason)s"),
    gettext_noop("failed: ran past its time limit of %(seconds)s s"),
    gettext_noop("failed: the worker stopped on every attempt"),
    gettext_noop("retrying after a database error: %(reason)s"),
    gettext_noop("retrying: the worker stopped (attempt %(attempt)s of %(attempts)s)"),
    gettext_noop("retrying: the run of its batch stopped"),  # contest.services.attack_batches
    # contest.services.generation
    gettext_noop("training %(method)s: %(step)s"),
    gettext_noop("data set %(n)s of %(total)s"),
    gettext_noop("%(round)s: model ready, %(queued)s of %(expected)s data sets queued"),
    gettext_noop("%(set)s of %(round)s (%(done)s of %(expected)s data sets)"),
    gettext_noop("%(set)s of %(round)s (%(done)s of %(expected)s data sets); the round is ready"),
    # contest.services.uploads
    gettext_noop("rejected: %(n)s problem(s)"),
    gettext_noop("anonymized set #%(seq)s: %(status)s"),
    gettext_noop("etable #%(seq)s: %(status)s"),
    gettext_noop("etraces #%(seq)s: %(status)s"),
    gettext_noop("score = %(score)s"),
    gettext_noop("s_U = %(s_u)s (valid)"),
    gettext_noop("s_U = %(s_u)s (invalid)"),
    # starts with Job.SUPERSEDED (Job.superseded tells such a row by it)
    gettext_noop("superseded by upload #%(seq)s: the preview of the newer upload replaces it"),
    # contest.services.judge
    gettext_noop("%(sets)s sets to publish: %(queued)s set jobs queued; analyses queued on %(analysed)s"),
    gettext_noop("%(set)s: no public set (no valid final upload)"),
    gettext_noop("%(set)s pseudonymized; %(n)s judge attacks run"),
    gettext_noop("%(n)s judge attacks run on %(set)s"),
    gettext_noop("pseudonymizing %(set)s"),
    gettext_noop("%(attack)s on %(set)s"),
    gettext_noop("skipped: the anonymization phase closed"),
    # contest.services.results
    gettext_noop("queued re-scoring: %(anonymized_sets)s anonymized sets, %(attacks)s attacks, "
                 "%(judge_attacks)s judge attacks"),
    gettext_noop("results snapshot %(snapshot)s through round %(round)s, final (published)"),
    gettext_noop("results snapshot %(snapshot)s through round %(round)s, final (embargoed)"),
    gettext_noop("results snapshot %(snapshot)s through round %(round)s, provisional (published)"),
    gettext_noop("results snapshot %(snapshot)s through round %(round)s, provisional (embargoed)"),
    # contest.services.previews
    gettext_noop("no preview: the set is not valid or the anonymization phase is closing"),
    gettext_noop("preview: s_I,min %(s_i)s, s_T,min %(s_t)s"),
    # contest.services.announcements
    gettext_noop("e-mailed %(sent)s of %(total)s addresses (%(members)s of team members)"),
    # contest.services.round_figures
    gettext_noop("%(part)s of %(round)s"),
    # contest.services.analyses
    gettext_noop("%(set)s: TP-TV-Top50 %(tp)s, TM-EMD %(tm)s"),
    # contest.services.bundles
    gettext_noop("adding %(path)s"),
    gettext_noop("storing the zip"),
    gettext_noop("%(file)s: %(files)s files, %(size)s bytes, SHA-256 %(sha256)s"),
)

#: The statuses a ``%(status)s`` may hold (an upload's), for the catalog.
STATUSES = (gettext_noop("valid"), gettext_noop("invalid"), gettext_noop("rejected"), gettext_noop("pending"))

_FIELD = re.compile(r"%\((\w+)\)s")


def say(template: str, **values) -> str:
    """The English message of ``template`` (one of :data:`TEMPLATES`) with ``values`` filled in."""
    if template not in TEMPLATES:
        raise ValueError(f"job message {template!r} is not in contest.services.job_messages.TEMPLATES")
    return template % values


@lru_cache(maxsize=1)
def _patterns() -> list[tuple[re.Pattern, str]]:
    """Each template as a pattern that captures its values, the most literal text first (so that
    "%(set)s of %(round)s (...)" is tried before the looser "%(part)s of %(round)s")."""
    def pattern(template: str) -> re.Pattern:
        parts = _FIELD.split(template)  # literal, name, literal, name, ...
        body = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        return re.compile(body, re.S)
    ordered = sorted(TEMPLATES, key=lambda t: len(_FIELD.sub("", t)), reverse=True)
    return [(pattern(t), t) for t in ordered]


def shown(message: str) -> str:
    """``message`` (a job row's) in the active language: its template translated, its values as stored;
    a ``reason`` (a service's refusal or an error) and a ``status`` are looked up in the catalog too."""
    if not message:
        return message
    for pattern, template in _patterns():
        found = pattern.fullmatch(message)
        if found:
            values = found.groupdict()
            for name in ("reason", "status"):
                if name in values:
                    values[name] = gettext(values[name])
            return gettext(template) % values
    return gettext(message)
