"""Eval runs: a release against a target, every case under ``normal`` retrieval.

A run records the release it used (number and hash) and the target's settings, so runs
of different releases are never compared as if alike. Invariants are reported apart and
never folded into a pass rate; one failing invariant makes the run red.

The work is split into chunk tasks; each result row is unique per (run, case), so a
chunk delivered twice writes nothing twice.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.utils import timezone

from cases import checklist, roles
from cases.models import EvalResult, EvalRun, Release, ReleaseItem, RunState, Stratum, Target
from cases.scoring import ResponseError, compile_case
from cases.scoring_config import detector_config_from_settings
from cases.services.checks import call_target, target_snapshot
from cases.targets.limits import check_budget
from cases.targets.slots import target_slot

CHUNK = 100


def eval_start(*, release: Release, target: Target, user) -> EvalRun:
    """Queue a run of ``release`` on ``target`` (reviewers and leads)."""
    if user is not None and not roles.can_review(user):
        raise PermissionDenied("only reviewers and leads start eval runs")
    item_ids = list(release.items.order_by("case_slug").values_list("id", flat=True))
    with transaction.atomic():
        run = EvalRun.objects.create(
            release=release,
            release_number=release.number,
            release_hash=release.content_hash,
            target=target,
            target_settings=target_snapshot(target),
            cases_total=len(item_ids),
            requested_by=user,
        )
        transaction.on_commit(lambda: enqueue_run(run, item_ids))
    return run


def enqueue_run(run: EvalRun, item_ids: list[int]) -> None:
    from cases.tasks import run_eval_chunk

    target = run.target
    for start in range(0, len(item_ids), CHUNK):
        ids = item_ids[start : start + CHUNK]
        budget = check_budget(
            timeout=target.timeout,
            retries=target.retries,
            calls=len(ids) + target.concurrency,
            concurrency=target.concurrency,
        )
        run_eval_chunk.apply_async(
            args=[run.pk, ids],
            queue=settings.CHECK_QUEUE,
            soft_time_limit=budget.soft_limit,
            time_limit=budget.hard_limit,
        )


def _strata_of(tags: list[str], strata: list[tuple[str, list[str]]]) -> list[str]:
    return checklist.matching_strata(tags, strata)


def eval_execute_chunk(run_id: int, item_ids: list[int]) -> int:
    """Run the cases of one chunk that have no result yet. Returns how many it ran."""
    run = EvalRun.objects.select_related("target").get(pk=run_id)
    EvalRun.objects.filter(pk=run_id, state=RunState.QUEUED).update(state=RunState.RUNNING)
    done = set(EvalResult.objects.filter(run=run).values_list("case_slug", flat=True))
    items = [
        i for i in ReleaseItem.objects.filter(pk__in=item_ids).select_related("version") if i.case_slug not in done
    ]
    if not items:
        _finish_if_complete(run)
        return 0
    strata = list(Stratum.objects.values_list("name", "tags"))
    config = detector_config_from_settings()
    target = run.target
    budget = check_budget(timeout=target.timeout, retries=target.retries, calls=1, concurrency=1)
    lock = threading.Lock()
    rows: list[EvalResult] = []

    def one(item: ReleaseItem) -> None:
        content = json.loads(item.version.canonical_json)
        try:
            with target_slot(target.pk, target.concurrency, budget.call_worst):
                call = call_target(
                    target, content["question"], "normal", 0, item.case_slug, f"eval-{run.pk}/{item.case_slug}"
                )
            row = EvalResult(
                run=run,
                case_slug=item.case_slug,
                version=item.version,
                invariant=bool(content.get("invariant")),
                strata=_strata_of(content.get("tags", []), strata),
                attempts=len(call.attempts),
                duration_ms=sum(a.duration_ms for a in call.attempts),
            )
            if call.response is None:
                row.error = call.error or "no answer"
            else:
                row.response = call.response
                try:
                    score = compile_case(content["expectations"], invariant=row.invariant, config=config).score(
                        call.response
                    )
                    row.passed = score.passed
                    row.results = [r.to_dict() for r in score.results]
                except (ResponseError, ValueError) as exc:
                    row.error = f"the response cannot be scored: {exc}"
            with lock:
                rows.append(row)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=min(len(items), target.concurrency), thread_name_prefix="eval") as pool:
        list(pool.map(one, items))
    EvalResult.objects.bulk_create(rows, ignore_conflicts=True)
    _finish_if_complete(run)
    return len(rows)


def _finish_if_complete(run: EvalRun) -> None:
    count = EvalResult.objects.filter(run=run).count()
    EvalRun.objects.filter(pk=run.pk).update(cases_done=count)
    if count >= run.cases_total:
        with transaction.atomic():
            locked = EvalRun.objects.select_for_update().get(pk=run.pk)
            if locked.state in (RunState.DONE, RunState.ERROR):
                return
            locked.summary = summarize(locked)
            locked.state = RunState.DONE
            locked.finished_at = timezone.now()
            locked.save(update_fields=["summary", "state", "finished_at"])


def _rate(passed: int, total: int) -> float | None:
    return round(100.0 * passed / total, 1) if total else None


def summarize(run: EvalRun) -> dict[str, Any]:
    """Pass rates overall and per stratum over ordinary cases; invariants apart."""
    results = list(EvalResult.objects.filter(run=run).values("case_slug", "invariant", "strata", "passed", "error"))
    ordinary = [r for r in results if not r["invariant"]]
    invariants = [r for r in results if r["invariant"]]
    strata: dict[str, dict[str, Any]] = {}
    for r in ordinary:
        for name in r["strata"] or ["(no stratum)"]:
            s = strata.setdefault(name, {"total": 0, "passed": 0})
            s["total"] += 1
            s["passed"] += bool(r["passed"])
    for s in strata.values():
        s["rate"] = _rate(s["passed"], s["total"])
    passed = sum(bool(r["passed"]) for r in ordinary)
    failing_invariants = sorted(r["case_slug"] for r in invariants if r["passed"] is not True)
    return {
        "overall": {
            "total": len(ordinary),
            "passed": passed,
            "rate": _rate(passed, len(ordinary)),
            "errors": sum(1 for r in ordinary if r["passed"] is None),
        },
        "strata": dict(sorted(strata.items())),
        "invariants": {
            "total": len(invariants),
            "passed": len(invariants) - len(failing_invariants),
            "failed": len(failing_invariants),
            "failures": failing_invariants,
        },
        # One failing (or unanswered) invariant makes the run red, whatever the pass rate.
        "red": bool(failing_invariants),
    }


def run_json(run: EvalRun) -> dict[str, Any]:
    return {
        "run": run.pk,
        "release": run.release_number,
        "releaseHash": run.release_hash,
        "target": run.target_settings.get("name"),
        "state": run.state,
        "casesTotal": run.cases_total,
        "casesDone": run.cases_done,
        **run.summary,
    }


class NotComparable(Exception):
    pass


def compare_runs(a: EvalRun, b: EvalRun) -> dict[str, list[dict[str, Any]]]:
    """Cases that flipped between two runs of the same release."""
    if a.release_hash != b.release_hash or a.release_number != b.release_number:
        raise NotComparable(
            f"run {a.pk} used release {a.release_number} and run {b.pk} used release {b.release_number}: "
            "scores of different releases are not comparable"
        )
    left = dict(EvalResult.objects.filter(run=a).values_list("case_slug", "passed"))
    right = dict(EvalResult.objects.filter(run=b).values_list("case_slug", "passed"))
    flipped = {"now_failing": [], "now_passing": []}
    for slug in sorted(set(left) & set(right)):
        if left[slug] is True and right[slug] is not True:
            flipped["now_failing"].append({"caseId": slug, "before": left[slug], "after": right[slug]})
        elif left[slug] is not True and right[slug] is True:
            flipped["now_passing"].append({"caseId": slug, "before": left[slug], "after": right[slug]})
    return flipped
