from django.core.management.base import BaseCommand, CommandError

from contest.services import backup


class Command(BaseCommand):
    help = ("Restore a backup written by `manage.py backup` into the configured database (PostgreSQL: "
            "pg_restore --clean --if-exists). Refuses a database that holds data unless --force.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="a backup: tracecup-....dump (PostgreSQL) or tracecup-....sqlite3 (SQLite)")
        parser.add_argument("--force", action="store_true", help="replace what the database holds")

    def handle(self, *args, **opts):
        try:
            backup.restore(opts["file"], force=opts["force"])
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restored {opts['file']}")
