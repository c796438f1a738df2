"""The discrimination check (checklist item 2) and the invariant check.

``check_request`` records a queued :class:`CheckRun` and enqueues it on commit;
``check_execute`` (called by the Celery task) claims the row with a conditional UPDATE,
calls the target under the baseline and every sabotage mode concurrently, scores each
answer and records the verdict. ``checks_sweep`` re-enqueues runs whose worker vanished.
"""

from __future__ import annotations

import json
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime, timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from cases import canonical, roles
from cases.models import (
    Case,
    CaseStatus,
    CaseVersion,
    CheckAttempt,
    CheckKind,
    CheckRun,
    CheckState,
    Target,
    TargetKind,
    Verdict,
)
from cases.scoring import ResponseError, compile_case
from cases.scoring_config import detector_config_from_settings
from cases.targets.client import Attempt, CallResult, CallSettings, call_http, call_python, load_callable
from cases.targets.limits import check_budget
from cases.targets.outbound import Allowlist
from cases.targets.slots import target_slot

log = logging.getLogger(__name__)

BASELINE = "normal"
MAX_DELIVERIES = 3
PROGRESS_EVERY = 0.3  # seconds between progress writes of a batch


class NoTarget(Exception):
    pass


def default_target() -> Target | None:
    return Target.objects.filter(is_default=True).first()


def _content_to_check(case: Case, version: CaseVersion | None) -> tuple[dict[str, Any], str]:
    if version is not None:
        return json.loads(version.canonical_json), version.content_hash
    content = canonical.content_of_case(case)
    return content, case.content_hash


def check_request(
    *,
    case: Case,
    user=None,
    target: Target | None = None,
    version: CaseVersion | None = None,
    rerun: bool = False,
    dispatch: bool = True,
) -> CheckRun:
    """The check of this content on this target: the existing one, or a new queued one.

    The same content and target are not checked twice unless ``rerun`` is asked for.
    ``dispatch=False`` leaves a new run for the caller to execute (``checks_execute``).
    """
    if rerun and user is not None and not roles.can_review(user):
        raise PermissionDenied("only reviewers and leads re-run checks")
    target = target or default_target()
    if target is None:
        raise NoTarget("no default target is registered; a lead registers one under Targets")
    with transaction.atomic():
        run, created = _create_run(case=case, user=user, target=target, version=version, rerun=rerun)
        if created and dispatch:
            transaction.on_commit(lambda: enqueue([run.pk], target))
    return run


def _create_run(*, case: Case, user, target: Target, version: CaseVersion | None, rerun: bool) -> tuple[CheckRun, bool]:
    content, content_hash = _content_to_check(case, version)
    with transaction.atomic():
        existing = (
            CheckRun.objects.select_for_update()
            .filter(case=case, target=target, content_hash=content_hash, rerun_of__isnull=True)
            .first()
        )
        if existing is not None and not rerun:
            return existing, False
        run = _new_run(
            case=case,
            content=content,
            content_hash=content_hash,
            target=target,
            user=user,
            version=version,
            rerun_of=existing,
        )
        run.save()
    return run, True


def _new_run(
    *, case: Case, content: dict, content_hash: str, target: Target, user, version: CaseVersion | None, rerun_of=None
) -> CheckRun:
    modes = [BASELINE, *target.sabotage_modes]
    return CheckRun(
        case=case,
        version=version,
        content_hash=content_hash,
        content={"expectations": content.get("expectations", []), "invariant": bool(content.get("invariant"))},
        target=target,
        target_settings=target_snapshot(target),
        kind=CheckKind.INVARIANT if content.get("invariant") else CheckKind.DISCRIMINATION,
        modes=modes,
        seed=random.randint(1, 2**31 - 1),
        calls_total=len(modes),
        requested_by=user,
        rerun_of=rerun_of,
    )


def checks_queue_for_proposals(*, slugs: list[str], user) -> int:
    """Queue the check of freshly submitted proposals on the default target (in bulk).

    Content already checked on that target is not checked again. Returns how many
    checks were queued; none when no default target is registered.
    """
    target = default_target()
    if target is None or not slugs:
        return 0
    runs: list[CheckRun] = []
    for start in range(0, len(slugs), 5000):
        chunk = Case.objects.filter(slug__in=slugs[start : start + 5000], status=CaseStatus.PROPOSED)
        checked = set(
            CheckRun.objects.filter(case__in=chunk, target=target, rerun_of__isnull=True).values_list(
                "case_id", "content_hash"
            )
        )
        for case in chunk:
            if (case.pk, case.content_hash) not in checked:
                content = canonical.content_of_case(case)
                runs.append(
                    _new_run(
                        case=case,
                        content=content,
                        content_hash=case.content_hash,
                        target=target,
                        user=user,
                        version=None,
                    )
                )
    CheckRun.objects.bulk_create(runs, batch_size=1000)
    ids = [run.pk for run in runs]
    transaction.on_commit(lambda: enqueue(ids, target))
    return len(runs)


def checks_request_all_proposed(*, user, target: Target | None = None, rerun: bool = False) -> list[CheckRun]:
    """A lead runs the check of every proposed case at once."""
    if not roles.is_lead(user):
        raise PermissionDenied("only leads run the check for every proposed case")
    target = target or default_target()
    if target is None:
        raise NoTarget("no default target is registered; a lead registers one under Targets")
    runs, new_ids = [], []
    with transaction.atomic():
        for case in Case.objects.filter(status=CaseStatus.PROPOSED).order_by("slug"):
            run, created = _create_run(case=case, user=user, target=target, version=None, rerun=rerun)
            runs.append(run)
            if created:
                new_ids.append(run.pk)
        transaction.on_commit(lambda: enqueue(new_ids, target))
    return runs


def target_snapshot(target: Target) -> dict[str, Any]:
    return {
        "name": target.name,
        "kind": target.kind,
        "url": target.url,
        "callable": target.callable_path,
        "modes": list(target.sabotage_modes),
        "timeout": target.timeout,
        "retries": target.retries,
        "concurrency": target.concurrency,
        "maxResponseBytes": target.max_response_bytes,
    }


def enqueue(run_ids: list[int], target: Target) -> None:
    """Send runs of one target to the workers, in batches whose calls fit the time budget."""
    from cases.tasks import run_checks

    calls_per_run = 1 + len(target.sabotage_modes)
    batch = batch_size(target)
    for start in range(0, len(run_ids), batch):
        ids = run_ids[start : start + batch]
        budget = batch_budget(target, len(ids) * calls_per_run)
        run_checks.apply_async(
            args=[ids], queue=settings.CHECK_QUEUE, soft_time_limit=budget.soft_limit, time_limit=budget.hard_limit
        )


def batch_size(target: Target) -> int:
    """Runs per task: about four waves of calls. A task waits for its slowest call, so a
    batch of one wave would leave the target idle at the tail of every task."""
    return max(1, (4 * target.concurrency) // (1 + len(target.sabotage_modes)))


def batch_budget(target: Target, calls: int):
    # One extra wave: a call may first wait for a slot held by another worker's call.
    return check_budget(
        timeout=target.timeout, retries=target.retries, calls=calls + target.concurrency, concurrency=target.concurrency
    )


def validate_target(target: Target) -> list[str]:
    """Problems with a target's settings that would make its checks unsafe or impossible."""
    problems = []
    if target.kind == TargetKind.HTTP and not target.url:
        problems.append("url: an http target needs a URL")
    if target.kind == TargetKind.CALLABLE:
        try:
            load_callable(target.callable_path)
        except (ValueError, ImportError) as exc:
            problems.append(f"callable_path: {exc}")
    unknown = [m for m in target.sabotage_modes if m not in ("disabled", "random-chunk")]
    if unknown or not target.sabotage_modes:
        problems.append("sabotage_modes: choose one or more of disabled, random-chunk")
    budget = batch_budget(target, batch_size(target) * (1 + len(target.sabotage_modes)))
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    if budget.lease >= visibility:
        problems.append(
            f"timeout/retries: a check could take {budget.lease:.0f} s, longer than the broker's visibility "
            f"timeout of {visibility} s; lower the timeout or the retries"
        )
    return problems


def _allowlist(target: Target) -> Allowlist:
    return Allowlist.parse(settings.TARGET_ALLOWED_HOSTS) + Allowlist.parse(target.allowed_hosts)


def call_target(target: Target, question: str, mode: str, seed: int, case_id: str, key: str) -> CallResult:
    call_settings = CallSettings(
        timeout=target.timeout,
        retries=target.retries,
        max_bytes=target.max_response_bytes,
        allowlist=_allowlist(target),
    )
    payload = {"question": question, "retrieval": mode, "seed": seed, "caseId": case_id}
    if target.kind == TargetKind.HTTP:
        return call_http(target.url, payload, key, call_settings)
    if target.kind == TargetKind.CALLABLE:
        try:
            fn = load_callable(target.callable_path)
        except (ImportError, ValueError) as exc:
            # A target that cannot be loaded is a failed call, recorded like any other.
            failed = Attempt(number=1, started_at=time.time(), duration_ms=0, error=f"cannot load the callable: {exc}")
            return CallResult(request={"callable": target.callable_path}, attempts=[failed])
        return call_python(fn, payload, call_settings, label=target.callable_path)
    from cases.demo.retrieval import answer

    return call_python(answer, payload, call_settings, label="cases.demo.retrieval:answer")


CLAIM_SQL = """
UPDATE cases_checkrun
SET state = 'running', started_at = %(now)s, lease_expires_at = %(lease)s,
    deliveries = deliveries + 1, calls_done = 0
WHERE id = ANY(%(ids)s)
  AND deliveries < %(max)s
  AND (state = 'queued' OR (state = 'running' AND lease_expires_at < %(now)s))
RETURNING id, deliveries
"""


def _claim(run_ids: list[int], lease: float) -> dict[int, int]:
    """Take the runs for this worker in one statement: {run id: delivery number}.

    A run someone else holds (state running, lease not expired) or that is finished is
    left out, so a second delivery of the same task does nothing.
    """
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            CLAIM_SQL,
            {"now": now, "lease": now + timedelta(seconds=lease), "ids": list(run_ids), "max": MAX_DELIVERIES},
        )
        return dict(cursor.fetchall())


def verdict_for(kind: str, modes: list[str], outcomes: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """(verdict, error text) from each mode's outcome ({"passed": bool} or {"error": str})."""
    sabotage = [m for m in modes if m != BASELINE]
    errored = [m for m in modes if outcomes[m].get("error")]
    if kind == CheckKind.INVARIANT:
        failed = [m for m in modes if not outcomes[m].get("error") and not outcomes[m]["passed"]]
        if failed:
            return Verdict.VIOLATED, ""
        if errored:
            return Verdict.ERROR, "; ".join(f"{m}: {outcomes[m]['error']}" for m in errored)
        return Verdict.HOLDS, ""
    passed = [m for m in sabotage if not outcomes[m].get("error") and outcomes[m]["passed"]]
    if passed:
        return Verdict.DOES_NOT_DISCRIMINATE, ""
    sabotage_errors = [m for m in sabotage if outcomes[m].get("error")]
    if sabotage_errors:
        return Verdict.ERROR, "; ".join(f"{m}: {outcomes[m]['error']}" for m in sabotage_errors)
    return Verdict.DISCRIMINATES, ""


def _finish(run: CheckRun, delivery: int, calls: dict[str, CallResult], compiled) -> None:
    """Score every mode's answer, decide the verdict and record it (only if still ours)."""
    outcomes: dict[str, dict[str, Any]] = {}
    attempts = []
    for mode in run.modes:
        result = calls[mode]
        for attempt in result.attempts:
            attempts.append(
                CheckAttempt(
                    run=run,
                    mode=mode,
                    number=attempt.number,
                    delivery=delivery,
                    request=result.request,
                    status=attempt.status,
                    body=attempt.body,
                    error=attempt.error,
                    started_at=datetime.fromtimestamp(attempt.started_at, tz=UTC),
                    duration_ms=attempt.duration_ms,
                )
            )
        if result.response is None:
            outcomes[mode] = {"error": result.error, "attempts": len(result.attempts)}
            continue
        try:
            score = compiled.score(result.response)
        except ResponseError as exc:
            outcomes[mode] = {"error": f"the response cannot be scored: {exc}", "attempts": len(result.attempts)}
            continue
        outcomes[mode] = {
            "passed": score.passed,
            "results": [r.to_dict() for r in score.results],
            "response": result.response,
            "attempts": len(result.attempts),
        }
    verdict, error = verdict_for(run.kind, run.modes, outcomes)
    baseline = outcomes.get(BASELINE, {})
    with transaction.atomic():
        # Fencing: only the delivery that holds the claim may finish the run.
        finished = CheckRun.objects.filter(pk=run.pk, state=CheckState.RUNNING, deliveries=delivery).update(
            state=CheckState.ERROR if verdict == Verdict.ERROR else CheckState.DONE,
            verdict=verdict,
            error=error,
            results=outcomes,
            baseline_failed=bool(baseline) and not baseline.get("error") and not baseline.get("passed"),
            calls_done=len(run.modes),
            finished_at=timezone.now(),
            lease_expires_at=None,
        )
        if finished == 1:
            CheckAttempt.objects.bulk_create(attempts)


def _fail_unfinished(claimed: list[tuple[CheckRun, int]], message: str) -> None:
    for run, delivery in claimed:
        CheckRun.objects.filter(pk=run.pk, state=CheckState.RUNNING, deliveries=delivery).update(
            state=CheckState.ERROR,
            verdict=Verdict.ERROR,
            error=message,
            finished_at=timezone.now(),
            lease_expires_at=None,
        )


def checks_execute(run_ids: list[int]) -> int:
    """Run queued checks of one target, all their calls concurrently up to the target's
    concurrency. A run another worker already holds is skipped. Returns how many ran.

    The pool threads only wait for a slot and call the target; every database write
    happens on this thread, on its one connection.
    """
    runs = {run.pk: run for run in CheckRun.objects.select_related("target", "case").filter(pk__in=run_ids)}
    if not runs:
        return 0
    target = next(iter(runs.values())).target
    lease = batch_budget(target, sum(len(run.modes) for run in runs.values())).lease
    deliveries = _claim(list(runs), lease)
    claimed = [(runs[run_id], deliveries[run_id]) for run_id in run_ids if run_id in deliveries]
    if not claimed:
        return 0
    config = detector_config_from_settings()
    compiled = {
        run.pk: compile_case(run.content["expectations"], invariant=run.content.get("invariant", False), config=config)
        for run, _ in claimed
    }
    call_worst = check_budget(timeout=target.timeout, retries=target.retries, calls=1, concurrency=1).call_worst

    def one(run: CheckRun, mode: str) -> tuple[CheckRun, str, CallResult]:
        with target_slot(target.pk, target.concurrency, call_worst):
            return run, mode, call_target(target, run.case.question, mode, run.seed, run.case.slug, f"{run.pk}/{mode}")

    results: dict[int, dict[str, CallResult]] = {run.pk: {} for run, _ in claimed}
    delivery_of = dict((run.pk, delivery) for run, delivery in claimed)
    calls = [(run, mode) for run, _ in claimed for mode in run.modes]
    pool = ThreadPoolExecutor(max_workers=min(len(calls), target.concurrency), thread_name_prefix="check")
    progress_due = time.monotonic() + PROGRESS_EVERY
    moved: set[int] = set()
    try:
        for future in as_completed([pool.submit(one, run, mode) for run, mode in calls]):
            run, mode, result = future.result()
            results[run.pk][mode] = result
            if len(results[run.pk]) == len(run.modes):
                _finish(run, delivery_of[run.pk], results[run.pk], compiled[run.pk])
                moved.discard(run.pk)
            else:
                moved.add(run.pk)
            if moved and time.monotonic() >= progress_due:
                # Progress for the live panels, a few times a second at most.
                for run_id in moved:
                    CheckRun.objects.filter(pk=run_id, deliveries=delivery_of[run_id], state=CheckState.RUNNING).update(
                        calls_done=Greatest(F("calls_done"), len(results[run_id]))
                    )
                moved.clear()
                progress_due = time.monotonic() + PROGRESS_EVERY
    except SoftTimeLimitExceeded:
        pool.shutdown(wait=False, cancel_futures=True)
        _fail_unfinished(claimed, "the check ran past its time budget and was stopped")
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return len(claimed)


def checks_sweep() -> dict[str, int]:
    """Re-enqueue runs stuck past their lease; give up after MAX_DELIVERIES with a clear error."""
    now = timezone.now()
    stale_queue = now - timedelta(seconds=settings.CHECK_QUEUED_GRACE)
    stuck = CheckRun.objects.filter(
        Q(state=CheckState.QUEUED, created_at__lt=stale_queue) | Q(state=CheckState.RUNNING, lease_expires_at__lt=now)
    ).select_related("target")
    requeued = gave_up = 0
    for run in stuck:
        if run.deliveries >= MAX_DELIVERIES:
            gave_up += CheckRun.objects.filter(pk=run.pk, state=run.state, deliveries=run.deliveries).update(
                state=CheckState.ERROR,
                verdict=Verdict.ERROR,
                error=f"gave up after {run.deliveries} deliveries: the worker running this check stopped each time",
                finished_at=now,
                lease_expires_at=None,
            )
            continue
        enqueue([run.pk], run.target)
        requeued += 1
    return {"requeued": requeued, "gave_up": gave_up}


def latest_check(case: Case, target: Target | None = None) -> CheckRun | None:
    runs = CheckRun.objects.filter(case=case)
    if target is not None:
        runs = runs.filter(target=target)
    return runs.order_by("-created_at", "-id").first()


def is_stale(run: CheckRun, case: Case) -> bool:
    """A verdict about content the case no longer has (the proposal was edited since)."""
    return run.version_id is None and run.content_hash != case.content_hash


def target_save(*, target: Target, user) -> Target:
    """Register or change a target. ``user=None`` is the operator's command line."""
    if user is not None and not roles.is_lead(user):
        raise PermissionDenied("only leads manage targets")
    problems = validate_target(target)
    if problems:
        raise ValidationError(problems)
    with transaction.atomic():
        if target.is_default:
            Target.objects.exclude(pk=target.pk).filter(is_default=True).update(is_default=False)
        target.save()
    return target
