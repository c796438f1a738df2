"""``manage.py run_eval --release N --target NAME [--wait] [--json]``

Exit status: 0 when the run completed and no invariant failed, 1 when the run is red
(an invariant failed) or did not complete, 2 on bad input.
"""

import json
import sys
import time

from django.core.management.base import BaseCommand

from cases.models import EvalRun, Release, RunState, Target
from cases.services import evals


class Command(BaseCommand):
    help = "Run a release against a target: every case under normal retrieval, scored."

    def add_arguments(self, parser):
        parser.add_argument("--release", type=int, required=True)
        parser.add_argument("--target", required=True)
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--inline", action="store_true", help="run in this process instead of on the workers")
        parser.add_argument("--timeout", type=float, default=3600)

    def handle(self, *args, **opts):
        release = Release.objects.filter(number=opts["release"]).first()
        if release is None:
            self.stderr.write(f"error: --release: there is no release {opts['release']}")
            sys.exit(2)
        target = Target.objects.filter(name=opts["target"]).first()
        if target is None:
            self.stderr.write(f"error: --target: no target named {opts['target']!r}")
            sys.exit(2)
        if opts["inline"]:
            run = EvalRun.objects.create(
                release=release,
                release_number=release.number,
                release_hash=release.content_hash,
                target=target,
                target_settings=evals.target_snapshot(target),
                cases_total=release.items.count(),
            )
            evals.eval_execute_chunk(run.pk, list(release.items.values_list("id", flat=True)))
        else:
            run = evals.eval_start(release=release, target=target, user=None)
        if not (opts["wait"] or opts["inline"]):
            self._print(run, opts)
            return
        deadline = time.monotonic() + opts["timeout"]
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.state in (RunState.DONE, RunState.ERROR):
                break
            time.sleep(0.5)
        self._print(run, opts)
        sys.exit(0 if run.state == RunState.DONE and not run.summary.get("red") else 1)

    def _print(self, run: EvalRun, opts) -> None:
        data = evals.run_json(run)
        if opts["json"]:
            self.stdout.write(json.dumps(data))
            return
        self.stdout.write(f"run {run.pk}: release {run.release_number} on {data['target']}: {run.state}")
        overall = data.get("overall")
        if overall:
            self.stdout.write(f"  ordinary cases: {overall['passed']}/{overall['total']} passed ({overall['rate']}%)")
            inv = data["invariants"]
            self.stdout.write(
                f"  invariants: {inv['passed']}/{inv['total']} hold"
                + (f"; FAILING: {', '.join(inv['failures'])}" if inv["failures"] else "")
            )
            self.stdout.write("  RED: an invariant failed" if data["red"] else "  green")
