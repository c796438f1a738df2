import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from cases.models import SABOTAGE_MODES, Target, TargetKind
from cases.services.checks import target_save


class Command(BaseCommand):
    help = "Register and list systems under test (targets) for the discrimination check."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="register a target")
        add.add_argument("name")
        kind = add.add_mutually_exclusive_group(required=True)
        kind.add_argument("--url", help="an HTTP endpoint speaking the target protocol")
        kind.add_argument("--callable", dest="callable_path", help="package.module:function")
        kind.add_argument("--demo", action="store_true", help="the bundled demo retrieval system")
        add.add_argument("--modes", default=",".join(SABOTAGE_MODES), help="sabotage modes, comma-separated")
        add.add_argument("--timeout", type=float, default=30.0, help="seconds per attempt (connect and total)")
        add.add_argument("--retries", type=int, default=3)
        add.add_argument("--concurrency", type=int, default=4)
        add.add_argument("--max-bytes", type=int, default=1024 * 1024, help="response size cap")
        add.add_argument("--allow-host", action="append", default=[], help="allow this host or network (repeatable)")
        add.add_argument("--default", action="store_true", help="check new proposals on this target")
        sub.add_parser("list", help="list targets")

    def handle(self, *args, **opts):
        if opts["action"] == "list":
            for t in Target.objects.order_by("name"):
                where = t.url or t.callable_path or "bundled demo"
                flag = " (default)" if t.is_default else ""
                self.stdout.write(
                    f"{t.name}{flag}\t{t.kind}\t{where}\tmodes={','.join(t.sabotage_modes)}\t"
                    f"timeout={t.timeout:g}s retries={t.retries} concurrency={t.concurrency}"
                )
            return
        if Target.objects.filter(name=opts["name"]).exists():
            raise CommandError(f"a target named {opts['name']!r} already exists")
        kind = TargetKind.HTTP if opts["url"] else TargetKind.CALLABLE if opts["callable_path"] else TargetKind.DEMO
        target = Target(
            name=opts["name"],
            kind=kind,
            url=opts["url"] or "",
            callable_path=opts["callable_path"] or "",
            sabotage_modes=[m.strip() for m in opts["modes"].split(",") if m.strip()],
            timeout=opts["timeout"],
            retries=opts["retries"],
            concurrency=opts["concurrency"],
            max_response_bytes=opts["max_bytes"],
            allowed_hosts=opts["allow_host"],
            is_default=opts["default"],
        )
        try:
            target.full_clean(exclude=["sabotage_modes", "allowed_hosts"])
            # The command line is the operator's own interface: no signed-in user to check.
            target_save(target=target, user=None)
        except ValidationError as exc:
            for message in exc.messages:
                self.stderr.write(f"error: {message}")
            sys.exit(2)
        self.stdout.write(f"registered target {target.name} ({target.kind})")
