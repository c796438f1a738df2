import json
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from cases.services.audit_report import audit_events, audit_rows


class Command(BaseCommand):
    help = "Audit events for scripts: every classified change, or only relaxations and overrides."

    def add_arguments(self, parser):
        parser.add_argument("--since", help="YYYY-MM-DD (default: everything)")
        parser.add_argument("--relaxed", action="store_true", help="only relaxations and overrides")
        parser.add_argument("--json", action="store_true", help="one JSON object per event")

    def handle(self, *args, **opts):
        since = None
        if opts["since"]:
            try:
                since = timezone.make_aware(datetime.strptime(opts["since"], "%Y-%m-%d"))
            except ValueError as exc:
                raise CommandError(f"--since: {opts['since']!r} is not a date like 2026-10-01") from exc
        rows = audit_rows(audit_events(since=since, relaxed_only=opts["relaxed"]).order_by("at", "id"))
        for row in rows:
            data = row.to_dict()
            if opts["json"]:
                self.stdout.write(json.dumps(data, ensure_ascii=False))
            else:
                self.stdout.write(
                    f"{data['at'][:16]}  {data['caseId']} v{data['version'] or '-'}  {data['classification']:10}  "
                    f"{data['path'] or data['action']}: {data['reason']}  by {data['actor']}, approved by "
                    f"{data['approver'] or '-'}; justification: {data['justification'] or '-'}"
                )
