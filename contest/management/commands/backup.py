from django.core.management.base import BaseCommand, CommandError

from contest.services import backup


class Command(BaseCommand):
    help = ("Back up the whole database (PostgreSQL: pg_dump --format=custom; SQLite: its online backup) into "
            "TRACECUP_BACKUP_DIR, keeping the newest TRACECUP_BACKUP_KEEP.")

    def add_arguments(self, parser):
        parser.add_argument("--folder", help="where to write it (default: TRACECUP_BACKUP_DIR)")
        parser.add_argument("--keep", type=int, help="backups to keep in the folder (default: TRACECUP_BACKUP_KEEP; 0: all)")

    def handle(self, *args, **opts):
        try:
            done = backup.backup(opts["folder"], keep=opts["keep"])
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"backed up to {done.path}: {done.size} bytes in {done.seconds:.1f} s")
