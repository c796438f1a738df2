"""Import and export of N generated cases against the floor measured in the same run.

    .venv/bin/python benchmarks/bench_import_export.py [--n 100000] [--repeat 2]

Import floor: parse every line of the same file (json.loads) plus a raw PostgreSQL
``COPY`` of the same case rows (psycopg 3 ``cursor.copy``). Export floor:
``COPY (SELECT the same columns) TO STDOUT``. Figures are reported as ratios to the
floor because these machines are shared and noisy; the best of ``--repeat`` runs counts.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from _services import rss_mib, setup_django

WORDS = [
    "northline",
    "terms",
    "payment",
    "net",
    "agreement",
    "supply",
    "freight",
    "credit",
    "account",
    "manager",
    "approval",
    "discount",
    "early",
    "invoice",
    "shipment",
    "warranty",
    "returns",
    "restocking",
    "hazardous",
    "surcharge",
    "pallet",
    "catalogue",
    "gloves",
    "fasteners",
    "tier",
    "pricing",
    "cut-off",
    "holiday",
    "schedule",
    "customer",
    "onboarding",
]


def generate(path: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            expectations = [
                {"kind": "must-contain", "value": str(rng.randint(10, 99)), "why": "the figure itself"},
                {
                    "kind": "must-not-contain",
                    "value": rng.choice(WORDS),
                    "why": "the superseded term",
                    "match": "normalized",
                },
                {"kind": "must-cite", "documentId": f"doc-{rng.randint(1, 500)}", "why": "provenance"},
            ]
            if rng.random() < 0.5:
                expectations.append(
                    {"kind": "behaviour", "value": {"neverCallsTool": ["apply_credit"], "maxSteps": 4}, "why": "scope"}
                )
            case = {
                "id": f"case-{i:07d}",
                "question": " ".join(rng.choices(WORDS, k=rng.randint(8, 20))) + "?",
                "tags": [rng.choice(["payments", "freight", "returns"]), rng.choice(["fact", "policy"])],
                "expectations": expectations,
                "source": {"kind": rng.choice(["trace", "ticket", "expert", "synthetic"])},
                "phrasings": [{"answer": " ".join(rng.choices(WORDS, k=30))} for _ in range(2)],
            }
            out.write(json.dumps(case) + "\n")


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    setup_django()
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from cases.services import cases_import, export_lines
    from cases.services.importing import CASE_COLUMNS

    lead, _ = User.objects.get_or_create(username="bench-lead")
    lead.groups.add(Group.objects.get(name="lead"))

    tmp = Path(tempfile.mkdtemp(prefix="bench-import-"))
    path = tmp / "cases.jsonl"
    generate(path, args.n)
    size_mb = path.stat().st_size / 1e6
    print(f"{args.n:,} cases, {size_mb:.1f} MB of JSONL")

    def reset() -> None:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE cases_auditevent, cases_caseversion, cases_case RESTART IDENTITY CASCADE")

    def floor_import() -> None:
        reset()
        pg = connection.connection
        copy_sql = f"COPY cases_case ({', '.join(CASE_COLUMNS)}) FROM STDIN"
        with pg.transaction(), pg.cursor() as cursor, cursor.copy(copy_sql) as copy, path.open("rb") as f:
            for line in f:
                obj = json.loads(line)
                copy.write_row(
                    (
                        obj["id"],
                        obj["question"],
                        obj["tags"],
                        obj["source"]["kind"],
                        "",
                        "{}",
                        "[]",
                        json.dumps(obj["expectations"]),
                        json.dumps(obj["phrasings"]),
                        "[]",
                        False,
                        "draft",
                        lead.pk,
                        "0" * 64,
                        None,
                        0,
                        False,
                        "{}",
                        "2026-01-01T00:00:00Z",
                        "2026-01-01T00:00:00Z",
                    )
                )

    def engine_import(status: str):
        def run() -> None:
            reset()
            with path.open("rb") as f:
                result = cases_import(stream=f, user=lead, status=status)
            assert result.created == args.n, result

        return run

    rss0 = rss_mib()
    t_floor = best_of(args.repeat, floor_import)
    t_draft = best_of(args.repeat, engine_import("draft"))
    rss_import = rss_mib()
    t_accepted = best_of(args.repeat, engine_import("accepted"))

    print("\nimport (validation, hashing, audit events included)")
    print(f"  floor: parse + COPY cases      {t_floor:7.2f} s  {args.n / t_floor:9,.0f} cases/s")
    print(
        f"  import as draft                {t_draft:7.2f} s  {args.n / t_draft:9,.0f} cases/s  "
        f"ratio {t_draft / t_floor:.2f}x"
    )
    print(
        f"  import as accepted (+versions) {t_accepted:7.2f} s  {args.n / t_accepted:9,.0f} cases/s  "
        f"ratio {t_accepted / t_floor:.2f}x"
    )

    def floor_export() -> None:
        pg = connection.connection
        with (
            pg.cursor() as cursor,
            cursor.copy(
                "COPY (SELECT slug, question, tags, expectations, invariant, source_kind, source_ref, context, rubric,"
                " phrasings, wrong_answers, status, current_version FROM cases_case ORDER BY slug) TO STDOUT"
            ) as copy,
        ):
            for _ in copy:
                pass

    def engine_export() -> None:
        count = 0
        for _ in export_lines():
            count += 1
        assert count == args.n

    rss_before_export = rss_mib()
    t_floor_export = best_of(args.repeat, floor_export)
    t_export = best_of(args.repeat, engine_export)
    rss_export = rss_mib()
    print("\nexport")
    print(f"  floor: COPY ... TO STDOUT      {t_floor_export:7.2f} s  {args.n / t_floor_export:9,.0f} cases/s")
    print(
        f"  export_lines (JSONL)           {t_export:7.2f} s  {args.n / t_export:9,.0f} cases/s  "
        f"ratio {t_export / t_floor_export:.2f}x"
    )
    print("\nmemory (resident set size)")
    print(
        f"  start {rss0:.0f} MiB, after imports {rss_import:.0f} MiB, "
        f"before export {rss_before_export:.0f} MiB, after export {rss_export:.0f} MiB"
    )


if __name__ == "__main__":
    main()
