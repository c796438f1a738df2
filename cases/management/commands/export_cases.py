import sys

from django.core.management.base import BaseCommand

from cases.models import CaseStatus
from cases.services import export_lines


class Command(BaseCommand):
    help = "Write cases as JSONL (the interchange format, with version and status) to standard output."

    def add_arguments(self, parser):
        parser.add_argument("--status", choices=CaseStatus.values)
        parser.add_argument("--release", type=int, help="export the cases of release N")

    def handle(self, *args, **opts):
        if opts["release"] is not None:
            self.stderr.write("error: --release: releases are not available yet")
            sys.exit(2)
        out = sys.stdout
        for line in export_lines(status=opts["status"]):
            out.write(line)
        out.flush()
