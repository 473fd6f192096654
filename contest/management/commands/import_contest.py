from django.core.management.base import BaseCommand, CommandError

from contest.services.transfer import import_contest
from scoring.errors import ValidationError


class Command(BaseCommand):
    help = "Import a contest archive written by export_contest."

    def add_arguments(self, parser):
        parser.add_argument("archive")
        parser.add_argument("--slug", help="import under another slug")

    def handle(self, *args, **opts):
        try:
            contest = import_contest(opts["archive"], slug=opts["slug"])
        except (OSError, ValueError, ValidationError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported contest {contest.slug!r}")
