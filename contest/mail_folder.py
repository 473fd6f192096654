"""Mail written to a folder instead of sent: the demo's (and a developer's) mailbox.

``TRACECUP_MAIL_DIR`` set and no ``EMAIL_URL``: :class:`FolderEmailBackend` writes each message as one
text file ``<YYYYmmdd-HHMMSS>-<n>.txt`` in that folder, headers decoded (a Japanese subject reads as
Japanese, not as ``=?utf-8?b?...?=``) and the plain-text body as it was written, so a password-reset link
or an announcement is found with a file browser or ``ls``. The pages that say "check your mailbox" name the
folder while this backend is on (:func:`mail_folder`).
"""
from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

_COUNTER = itertools.count(1)
_LOCK = threading.Lock()


def mail_folder() -> Path | None:
    """The folder mail is written to, or None when mail is sent (or printed) instead."""
    if settings.EMAIL_BACKEND != f"{__name__}.FolderEmailBackend":
        return None
    return Path(settings.TRACECUP_MAIL_DIR)


def readable(message) -> str:
    """One ``EmailMessage`` as a person reads it: From, To, Date, Subject (decoded), a blank line, the body."""
    lines = [f"From: {message.from_email}", f"To: {', '.join(message.to)}"]
    if message.cc:
        lines.append(f"Cc: {', '.join(message.cc)}")
    if message.bcc:
        lines.append(f"Bcc: {', '.join(message.bcc)}")
    lines += [f"Date: {timezone.localtime().strftime('%Y-%m-%d %H:%M:%S %Z')}", f"Subject: {message.subject}",
              "", message.body]
    return "\n".join(lines).rstrip("\n") + "\n"


class FolderEmailBackend(BaseEmailBackend):
    """Writes each message to its own UTF-8 text file in ``settings.TRACECUP_MAIL_DIR``."""

    def send_messages(self, email_messages) -> int:
        folder = Path(settings.TRACECUP_MAIL_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        sent = 0
        for message in email_messages:
            if not message.recipients():
                continue
            with _LOCK:  # the name's number: two messages of one second (a process) never share a file
                name = f"{timezone.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_COUNTER)}.txt"
            # written aside and renamed, so a reader never sees half a message
            part = folder / f".{name}.part"
            part.write_text(readable(message), encoding="utf-8")
            part.replace(folder / name)
            sent += 1
        return sent
