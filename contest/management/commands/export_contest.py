from django.core.management.base import BaseCommand, CommandError

from contest.models import Contest
from contest.services.transfer import export_contest


class Command(BaseCommand):
    help = "Export a whole contest (rows and files, byte for byte) to a zip archive."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("output", help="archive path, e.g. contest.zip")

    def handle(self, *args, **opts):
        try:
            contest = Contest.objects.get(slug=opts["slug"])
        except Contest.DoesNotExist:
            raise CommandError(f"no contest {opts['slug']!r}") from None
        doc = export_contest(contest, opts["output"])
        self.stdout.write(f"exported {contest.slug!r} with {len(doc['files'])} files to {opts['output']}")
