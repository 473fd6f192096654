from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from contest.services.generation import request_generation
from contest.services.setup import SetupError, create_contest_from_yaml


class Command(BaseCommand):
    help = "Create a contest (rounds, phases, teams, members) from a versioned YAML file."

    def add_arguments(self, parser):
        parser.add_argument("file", help="contest YAML (see contest/example_contest.yaml)")
        parser.add_argument("--generate", action="store_true", help="also queue data generation of every round")

    def handle(self, *args, **opts):
        try:
            with open(opts["file"], encoding="utf-8") as f:
                contest = create_contest_from_yaml(f.read())
        except (OSError, SetupError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"created contest {contest.slug!r}: {contest.rounds.count()} rounds, "
                          f"{contest.teams.count()} teams")
        if opts["generate"]:

            for rnd in contest.rounds.all():
                with transaction.atomic():
                    job = request_generation(rnd)
                self.stdout.write(f"queued generation of {rnd.name} (job {job.pk})")
