import sys

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from cases.auditctx import audit_context
from cases.services import ImportFailed, cases_import
from cases.services.importing import IMPORT_STATUSES


class Command(BaseCommand):
    help = (
        "Import cases from a JSONL file (interchange or short golden-set format). All or nothing; exit 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSONL file, or - for standard input")
        parser.add_argument("--status", choices=IMPORT_STATUSES, default="draft")
        parser.add_argument("--user", required=True, help="username the cases are imported as")
        parser.add_argument("--update", action="store_true", help="replace cases whose id already exists")
        parser.add_argument(
            "--justification",
            default="",
            help="why, for relaxing changes to accepted cases (recorded in the audit trail)",
        )

    def handle(self, *args, **opts):
        User = get_user_model()
        try:
            user = User.objects.get(username=opts["user"])
        except User.DoesNotExist:
            self.stderr.write(f"error: --user: no user named {opts['user']!r}")
            sys.exit(2)
        path = opts["file"]
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            self.stderr.write(f"error: {path}: {exc.strerror}")
            sys.exit(2)
        try:
            with stream, audit_context("cli", command="import_cases", file=path):
                result = cases_import(
                    stream=stream,
                    user=user,
                    status=opts["status"],
                    update=opts["update"],
                    filename=path,
                    justification=opts["justification"],
                )
        except ImportFailed as exc:
            for error in exc.errors:
                self.stderr.write(f"{path}: {error}")
            self.stderr.write(f"{path}: nothing was imported ({len(exc.errors)} error(s))")
            sys.exit(2)
        except PermissionDenied as exc:
            raise CommandError(f"--user {user.username}: {exc}") from exc
        self.stdout.write(
            f"imported {result.created} new, {result.updated} updated, {result.unchanged} unchanged "
            f"case(s) as {result.status}"
        )
