import sys

from django.core.management.base import BaseCommand

from cases.models import CaseStatus, Release
from cases.services import export_lines
from cases.services.releases import release_lines


class Command(BaseCommand):
    help = "Write cases as JSONL (the interchange format, with version and status) to standard output."

    def add_arguments(self, parser):
        parser.add_argument("--status", choices=CaseStatus.values)
        parser.add_argument("--release", type=int, help="export the cases of release N")

    def handle(self, *args, **opts):
        out = sys.stdout
        if opts["release"] is not None:
            release = Release.objects.filter(number=opts["release"]).first()
            if release is None:
                self.stderr.write(f"error: --release: there is no release {opts['release']}")
                sys.exit(2)
            lines = release_lines(release)
        else:
            lines = export_lines(status=opts["status"])
        for line in lines:
            out.write(line)
        out.flush()
