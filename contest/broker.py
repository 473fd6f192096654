"""The embedded broker: kombu's filesystem transport without its torn-message race.

Pure kombu, importable without Django. ``filesystem://`` (the default broker of
``make demo`` and ``make test``) is served by :class:`FilesystemTransport`:
:func:`install` points kombu's ``filesystem`` alias here, and ``contest.celery``
calls it in every process (web, workers, beat, commands, tests) before any
connection is made.

kombu's own channel has two races between processes (kombu 5.7):

- a message file is created empty, then locked and written; a worker listing
  the folder in between moves it away and reads ``b""`` -- ``JSONDecodeError``
  in the worker's consumer, which then dies with its unacknowledged message
  (a fault test failed 1 run in 3 this way);
- a consumer moves the file to ``tempfile.gettempdir()``, often another file
  system, where ``shutil.move`` is a copy and a delete: two consumers can both
  copy one message.

Here a message is written to a hidden ``.part`` file in the queue folder and
renamed to its ``.msg`` name when complete (``rename`` is atomic on one file
system: a reader sees the whole message or nothing), and a consumer claims a
message by renaming it into the processed folder beside the queue (atomic
again: of several consumers exactly one gets it). A file that still does not
decode (left by an older writer or a full disk) is moved to ``rejected/``
beside the queue and logged, never fatal to the worker.
"""
from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)

#: Suffix of a message file still being written (not a ``<queue>.msg`` name, so no reader picks it up).
PART_SUFFIX = ".part"


class AtomicChannel(filesystem.Channel):
    """kombu's filesystem channel with atomic publish (write, then rename) and atomic claim (rename)."""

    def _put(self, queue, payload, **kwargs):
        """Write ``payload`` as ``<ms>_<uuid>.<queue>.msg`` in the queue folder, whole or not at all."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        part = os.path.join(self.data_folder_out, f".{name}{PART_SUFFIX}")
        try:
            with open(part, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.rename(part, final)
        except OSError as exc:
            try:
                os.remove(part)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        """The oldest whole message of ``queue``, claimed by renaming it out of the queue folder."""
        wanted = f"{queue}.msg"
        claimed_dir = self.processed_folder
        if not getattr(self, "_claimed_dir_made", False):
            os.makedirs(claimed_dir, exist_ok=True)  # a missing folder must not read as "claimed by another"
            self._claimed_dir_made = True
        for filename in sorted(os.listdir(self.data_folder_in)):
            if filename.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(claimed_dir, f"{os.getpid()}-{filename}")
            try:
                os.rename(os.path.join(self.data_folder_in, filename), claimed)
            except FileNotFoundError:
                continue  # another consumer claimed it first
            except OSError as exc:
                raise ChannelError(f"Cannot move {filename!r} to {claimed_dir!r}") from exc
            try:
                with open(claimed, "rb") as f:
                    payload = f.read()
                message = loads(bytes_to_str(payload))
            except (OSError, ValueError) as exc:
                self._reject(claimed, filename, exc)
                continue
            if not self.store_processed:
                os.remove(claimed)
            return message
        raise Empty()

    def _reject(self, claimed: str, filename: str, exc: Exception) -> None:
        """Keep an unreadable message file aside in ``rejected/`` (for the operator) and go on."""
        rejected = Path(self.data_folder_in).parent / "rejected"
        rejected.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(claimed, rejected / filename)
        except OSError:
            pass
        log.error("broker message %s is not readable (%s); kept in %s", filename, exc, rejected)


class FilesystemTransport(filesystem.Transport):
    """The filesystem transport with :class:`AtomicChannel`."""

    Channel = AtomicChannel


def install() -> None:
    """Make ``filesystem://`` URLs use :class:`FilesystemTransport` in this process."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:FilesystemTransport"
