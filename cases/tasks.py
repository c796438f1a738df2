"""Celery tasks: thin interfaces that take ids and call a service."""

from celery import shared_task

from cases.auditctx import audit_context
from cases.services import checks, evals


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_checks(run_ids: list[int]) -> int:
    with audit_context("task", task="run_checks"):
        return checks.checks_execute(run_ids)


@shared_task(ignore_result=True)
def sweep_checks() -> dict:
    return checks.checks_sweep()


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_eval_chunk(run_id: int, item_ids: list[int]) -> int:
    with audit_context("task", task="run_eval_chunk"):
        return evals.eval_execute_chunk(run_id, item_ids)


@shared_task(ignore_result=True)
def scan_leaks(case_ids: list[int] | None = None) -> int:
    from cases.services.leaks import leaks_scan

    with audit_context("task", task="scan_leaks"):
        return leaks_scan(case_ids)


@shared_task(ignore_result=True)
def near_duplicates() -> int:
    from django.core.cache import cache

    from cases.views.health import REPORT_KEY, near_duplicate_report

    report = near_duplicate_report()
    cache.set(REPORT_KEY, report, 24 * 3600)
    return report["pair_count"]
