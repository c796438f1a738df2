"""``manage.py discriminate --target NAME (--case ID ... | --all-proposed) [--wait] [--rerun]``

With ``--wait`` it prints one JSON line per case when its check has finished:
``{"caseId", "version", "verdict", "modes": {...}, "baseline": {...}, "error"}`` and
exits 0 when every check completed (whatever the verdicts), 1 when any ended in error.
"""

import json
import sys
import time

from django.core.management.base import BaseCommand

from cases.auditctx import audit_context
from cases.models import Case, CaseStatus, CheckRun, CheckState, Target
from cases.services import checks


def check_line(run: CheckRun) -> dict:
    def mode_summary(mode: str) -> dict:
        outcome = run.results.get(mode, {})
        if outcome.get("error"):
            return {"passed": None, "error": outcome["error"]}
        return {"passed": outcome.get("passed")}

    return {
        "caseId": run.case.slug,
        "version": run.version.number if run.version_id else None,
        "verdict": run.verdict,
        "modes": {mode: mode_summary(mode) for mode in run.modes if mode != checks.BASELINE},
        "baseline": mode_summary(checks.BASELINE),
        "error": run.error or None,
    }


class Command(BaseCommand):
    help = "Run the discrimination check of cases on a target."

    def add_arguments(self, parser):
        parser.add_argument("--target", required=True)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--case", nargs="+", dest="cases", metavar="ID")
        which.add_argument("--all-proposed", action="store_true")
        parser.add_argument("--wait", action="store_true", help="wait for the verdicts and print them")
        parser.add_argument("--rerun", action="store_true", help="check again even if this content was checked")
        parser.add_argument(
            "--inline", action="store_true", help="run the checks in this process instead of on the workers"
        )
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait with --wait")

    def handle(self, *args, **opts):
        try:
            target = Target.objects.get(name=opts["target"])
        except Target.DoesNotExist:
            self.stderr.write(f"error: --target: no target named {opts['target']!r} (see: manage.py targets list)")
            sys.exit(2)
        if opts["all_proposed"]:
            cases = list(Case.objects.filter(status=CaseStatus.PROPOSED).order_by("slug"))
        else:
            found = {c.slug: c for c in Case.objects.filter(slug__in=opts["cases"])}
            missing = [slug for slug in opts["cases"] if slug not in found]
            if missing:
                self.stderr.write(f"error: --case: no case with id {', '.join(map(repr, missing))}")
                sys.exit(2)
            cases = [found[slug] for slug in opts["cases"]]
        with audit_context("cli", command="discriminate"):
            runs = [
                checks.check_request(
                    case=case,
                    target=target,
                    version=_accepted_version(case),
                    rerun=opts["rerun"],
                    dispatch=not opts["inline"],
                )
                for case in cases
            ]
        if opts["inline"]:
            checks.checks_execute([r.pk for r in runs if not r.finished])
        if not opts["wait"]:
            for run in runs:
                self.stdout.write(json.dumps({"caseId": run.case.slug, "checkId": run.pk, "state": run.state}))
            return
        deadline = time.monotonic() + opts["timeout"]
        pending = {run.pk for run in runs}
        any_error = False
        while pending and time.monotonic() < deadline:
            for run in CheckRun.objects.filter(
                pk__in=pending, state__in=[CheckState.DONE, CheckState.ERROR]
            ).select_related("case", "version"):
                self.stdout.write(json.dumps(check_line(run)))
                self.stdout.flush()
                any_error |= run.state == CheckState.ERROR
                pending.discard(run.pk)
            if pending:
                time.sleep(0.5)
        for run in CheckRun.objects.filter(pk__in=pending).select_related("case", "version"):
            line = check_line(run) | {"verdict": "error", "error": f"still {run.state} after {opts['timeout']:g} s"}
            self.stdout.write(json.dumps(line))
            any_error = True
        sys.exit(1 if any_error else 0)


def _accepted_version(case: Case):
    """An accepted case is checked as its current version; a proposal as it stands."""
    if case.status == CaseStatus.ACCEPTED and case.current_version:
        return case.versions.get(number=case.current_version)
    return None
