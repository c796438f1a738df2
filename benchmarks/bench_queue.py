"""The review queue, the case page and the similar-cases lookup with N cases.

    .venv/bin/python benchmarks/bench_queue.py [--n 100000] [--runs 40] [--timestamps spread|import]

Data: N generated cases (``bench_import_export.generate``) imported by an expert through
``cases_import``, ``--proposed`` of them as proposed and the rest as drafts; no default
Target exists, so no checks are queued. ``--timestamps spread`` (default) then spreads
``updated_at`` over a year, as a queue fed over time looks; ``import`` keeps the single
timestamp of the import (every row ties and the keyset runs on the id alone). A
non-default Target and finished CheckRun rows for ``--checked`` of the cases (plus a
stale run for a tenth) are written so the verdict column has something to show.
``VACUUM ANALYZE`` runs before any timing.

Requests go through ``django.test.Client`` signed in as a reviewer (no proposals of
their own), in-process: the time is the whole Django stack (middleware, session, view,
SQL, template) without a network or a WSGI server. Each request type gets ``--warmup``
untimed requests, then ``--runs`` timed ones with DEBUG on (``connection.queries`` is
recorded, as under DEBUG=1) and ``--runs`` more with ``settings.DEBUG`` switched off in
process (no query log; the template engine keeps the options it was built with under
DEBUG=1), so the overhead of the query log shows. Query counts come from
``CaptureQueriesContext``; the SQL time column is the sum of the logged query times (ms
resolution each, DEBUG on); the CPU column is this thread's CPU time per request (DEBUG
off), which a busy machine inflates much less than wall time.

Then: EXPLAIN ANALYZE of the main queue query of each request, and of the deep pages
with the keyset written as a row comparison; ``similar_questions`` cold and warm; and,
unless ``--no-experiments``, the suggested indexes created on this throw-away database
(trigram GIN for ``?q=``, ``(updated_at)`` for the similar-cases stamp) and re-timed.
``--profile LABEL`` prints a cProfile of that request type.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import html
import io
import math
import pstats
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock
from urllib.parse import urlencode

from _services import setup_django
from bench_import_export import generate

NEXT_LINK = re.compile(r'href="(\?[^"]*after=[^"]*)">Next page')


@contextlib.contextmanager
def query_log(on: bool):
    """settings.DEBUG set directly: it switches Django's query log (``connection.queries``)
    and nothing else here. ``override_settings(DEBUG=...)`` would also rebuild the template
    engines (test signal), so the next request would parse every template again."""
    from django.conf import settings

    before = settings.DEBUG
    settings.DEBUG = on
    try:
        yield
    finally:
        settings.DEBUG = before


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values):7.2f}  p95 {pct(values, 95):7.2f}  max {max(values):7.2f}"


def patch_missing_defaults() -> None:
    """Work-tree drift guard, on this throw-away database only: a NOT NULL column of
    ``cases_case`` that the import's ``COPY`` does not list gets its model default as a
    column default, so the import can run while the model is ahead of the importer."""
    from django.db import connection
    from django.db.models import NOT_PROVIDED

    from cases.models import Case
    from cases.services.importing import CASE_COLUMNS

    with connection.cursor() as cursor:
        for field in Case._meta.concrete_fields:
            if field.column in CASE_COLUMNS or field.null or field.primary_key or not field.has_default():
                continue
            if field.db_default is not NOT_PROVIDED:
                continue
            value = field.get_db_prep_save(field.get_default(), connection)
            cursor.execute(f'ALTER TABLE cases_case ALTER COLUMN "{field.column}" SET DEFAULT %s', [value])
            print(f"note: cases_case.{field.column} is not in importing.CASE_COLUMNS; bench DB default set")


def build_data(args) -> dict:
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from cases.models import Case, CheckRun, Target
    from cases.services import cases_import

    expert, _ = User.objects.get_or_create(username="bench-expert")
    expert.groups.add(Group.objects.get(name="expert"))
    reviewer, _ = User.objects.get_or_create(username="bench-reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewer"))

    patch_missing_defaults()
    tmp = Path(tempfile.mkdtemp(prefix="bench-queue-"))
    path = tmp / "cases.jsonl"
    generate(path, args.n)
    lines = path.read_bytes().splitlines(keepends=True)
    n_proposed = round(args.n * args.proposed)
    start = time.perf_counter()
    for status, part in (("proposed", lines[:n_proposed]), ("draft", lines[n_proposed:])):
        if not part:
            continue
        chunk = tmp / f"{status}.jsonl"
        chunk.write_bytes(b"".join(part))
        with chunk.open("rb") as f:
            result = cases_import(stream=f, user=expert, status=status)
        assert result.created == len(part) and result.checks_queued == 0, result
    print(f"imported {args.n:,} cases ({n_proposed:,} proposed) in {time.perf_counter() - start:.1f} s")

    with connection.cursor() as cursor:
        if args.timestamps == "spread":
            cursor.execute("SELECT setseed(0.42)")
            cursor.execute(
                "UPDATE cases_case SET updated_at = now() - random() * interval '365 days',"
                " created_at = now() - interval '366 days'"
            )

    target = Target.objects.create(name="bench-target", kind="demo", is_default=False)
    rng = random.Random(11)
    ids = list(Case.objects.order_by("id").values_list("id", flat=True))
    checked = set(rng.sample(ids, round(len(ids) * args.checked)))
    runs = []
    rows = Case.objects.filter(id__in=checked).values_list("id", "content_hash", "expectations")
    results_blob = {
        mode: {"passed": rng.random() < 0.5, "response": {"answer": "lorem " * 60}, "scores": list(range(20))}
        for mode in ("baseline", "disabled", "random-chunk")
    }
    for case_id, content_hash, expectations in rows.iterator(chunk_size=5000):
        common = dict(
            case_id=case_id,
            target=target,
            content={"expectations": expectations, "invariant": False},
            kind="discrimination",
            modes=["disabled", "random-chunk"],
            state="done",
            results=results_blob,
            calls_total=3,
            calls_done=3,
            requested_by=expert,
        )
        if case_id % 10 == 0:  # an older run of content that has since changed
            runs.append(CheckRun(content_hash="f" * 64, verdict="does-not-discriminate", **common))
        runs.append(
            CheckRun(
                content_hash=content_hash, verdict=rng.choice(["discriminates", "does-not-discriminate"]), **common
            )
        )
    CheckRun.objects.bulk_create(runs, batch_size=2000)
    print(f"{len(runs):,} CheckRun rows for {len(checked):,} cases")

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute(
            "SELECT pg_size_pretty(pg_relation_size('cases_case')),"
            " pg_size_pretty(pg_total_relation_size('cases_case')),"
            " pg_size_pretty(pg_relation_size('case_status_updated'))"
        )
        heap, total, index = cursor.fetchone()
    print(f"cases_case: heap {heap}, with TOAST and indexes {total}; index case_status_updated {index}")
    return {"expert": expert, "reviewer": reviewer, "n_proposed": n_proposed, "checked": checked}


def cursor_at(reviewer, depth: int, **filters) -> tuple[str, int]:
    """The ``after`` token of the row ``depth`` rows into the default queue order."""
    from cases.models import Case, CaseStatus
    from cases.views.review import _encode_cursor

    rows = (
        Case.objects.filter(status=CaseStatus.PROPOSED, **filters)
        .exclude(proposer=reviewer)
        .order_by("-updated_at", "-id")
        .values_list("updated_at", "id")
    )
    total = rows.count()
    depth = min(depth, total - 1)
    updated_at, pk = rows[depth]
    return _encode_cursor([updated_at.isoformat(), pk]), total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--proposed", type=float, default=0.8, help="share of the cases imported as proposed")
    parser.add_argument("--checked", type=float, default=0.3, help="share of the cases with a CheckRun")
    parser.add_argument("--timestamps", choices=["spread", "import"], default="spread")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--walk", type=int, default=100, help="queue pages to walk through for the deep page")
    parser.add_argument("--profile", default="", help="cProfile this request label (e.g. 'queue deep ~90%%')")
    parser.add_argument("--no-explain", action="store_true")
    parser.add_argument("--no-experiments", action="store_true", help="skip the suggested indexes (bench DB only)")
    args = parser.parse_args()

    setup_django("bench_queue")
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from cases import similar
    from cases.models import Case
    from cases.views import review

    data = build_data(args)
    reviewer = data["reviewer"]
    client = Client(SERVER_NAME="localhost")
    client.force_login(reviewer)

    def get(url: str):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return response

    # The deep page by walking the "Next page" links, as a reviewer would.
    url = "/review/"
    start = time.perf_counter()
    walk_times = []
    for _ in range(args.walk):
        t0 = time.perf_counter()
        body = get(url).content.decode()
        walk_times.append((time.perf_counter() - t0) * 1000)
        match = NEXT_LINK.search(body)
        assert match, f"no next page after {url}"
        url = "/review/" + html.unescape(match.group(1))
    walked = url
    print(
        f"walked {args.walk} queue pages ({args.walk * review.PAGE_SIZE:,} rows) in "
        f"{time.perf_counter() - start:.2f} s; per page {ms(walk_times)} ms"
    )

    deep_after, total = cursor_at(reviewer, int(data["n_proposed"] * 0.9))
    f_deep_after, f_total = cursor_at(reviewer, 10**9, tags__contains=["payments"], source_kind="ticket")
    f_deep_after, _ = cursor_at(reviewer, int(f_total * 0.9), tags__contains=["payments"], source_kind="ticket")
    slug = (
        Case.objects.filter(id__in=data["checked"])
        .order_by("id")
        .values_list("slug", flat=True)[len(data["checked"]) // 2]
    )
    filtered = "/review/?" + urlencode({"tag": "payments", "source": "ticket"})
    requests = {
        "queue page 1": "/review/",
        f"queue page {args.walk + 1} (walked)": walked,
        "queue deep ~90%": "/review/?" + urlencode({"after": deep_after}),
        "queue oldest-first page 1": "/review/?sort=oldest",
        f"filtered page 1 ({f_total:,} match)": filtered,
        "filtered deep ~90%": filtered + "&" + urlencode({"after": f_deep_after}),
        "search q=freight (common word)": "/review/?q=freight",
        "search q=zebra (no match)": "/review/?q=zebra",
        "case page": f"/cases/{slug}/",
    }
    print(f"queue: {total:,} proposals offered to the reviewer\n")

    counts: dict[str, int] = {}
    sqls: dict[str, list[dict]] = {}
    print(f"{'request':38} {'q':>3}  {'DEBUG on (ms)':^46}  {'DEBUG off (ms)':^46}  {'SQL ms':>6}  {'CPU ms':>6}")
    for label, url in requests.items():
        for _ in range(args.warmup):
            get(url)
        with CaptureQueriesContext(connection) as ctx:
            get(url)
        counts[label] = len(ctx.captured_queries)
        sqls[label] = ctx.captured_queries
        sql_ms = []
        for _ in range(10):
            with CaptureQueriesContext(connection) as ctx:
                get(url)
            sql_ms.append(sum(float(q["time"]) for q in ctx.captured_queries) * 1000)
        timings, cpu = {}, []
        for debug in (True, False):
            with query_log(debug):
                times = []
                for _ in range(args.runs):
                    t0, c0 = time.perf_counter(), time.thread_time()
                    get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                    if not debug:
                        cpu.append((time.thread_time() - c0) * 1000)
            timings[debug] = times
        print(
            f"{label:38} {counts[label]:>3}  {ms(timings[True])}  {ms(timings[False])}"
            f"  {statistics.median(sql_ms):6.1f}  {statistics.median(cpu):6.1f}"
        )

    print("\nquery counts")
    page_counts = {k: v for k, v in counts.items() if k.startswith(("queue", "filtered", "search"))}
    for label, count in page_counts.items():
        print(f"  {label:38} {count}")
    print("  (an empty page skips the CheckRun lookup: one query fewer)")
    with mock.patch.object(review, "PAGE_SIZE", 100):
        with CaptureQueriesContext(connection) as ctx:
            body = get("/review/").content.decode()
        rows = body.count('<td><a href="/review/')
    print(
        f"  PAGE_SIZE=100: {len(ctx.captured_queries)} queries for {rows} rows (PAGE_SIZE=25: {counts['queue page 1']})"
    )
    for label in ("queue page 1", "case page"):
        print(f"  {label}:")
        for q in sqls[label]:
            print(f"    {float(q['time']) * 1000:6.1f} ms  {q['sql'][:150]}")

    if not args.no_explain:
        explain(sqls, connection)
        explain_keyset(reviewer, deep_after, connection, "queue deep ~90%")
        explain_keyset(
            reviewer, f_deep_after, connection, "filtered deep ~90%", tags__contains=["payments"], source_kind="ticket"
        )

    similar_bench(similar, connection, args)

    if not args.no_experiments:
        experiments(requests, get, connection, similar, args)

    if args.profile:
        url = requests[args.profile]
        profiler = cProfile.Profile()
        with query_log(False):
            profiler.enable()
            for _ in range(args.runs):
                get(url)
            profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(20)
        print(f"\nprofile of {args.runs} x {args.profile}\n{out.getvalue()}")


def experiments(requests: dict[str, str], get, connection, similar, args) -> None:
    """The suggested indexes, created on this throw-away database only, then re-timed."""
    from django.test.utils import CaptureQueriesContext

    def timed(url: str) -> list[float]:
        for _ in range(args.warmup):
            get(url)
        times = []
        with query_log(False):
            for _ in range(args.runs):
                t0 = time.perf_counter()
                get(url)
                times.append((time.perf_counter() - t0) * 1000)
        return times

    print("\nexperiment: trigram indexes for ?q= (icontains is UPPER(col) LIKE UPPER('%q%'))")
    with connection.cursor() as cursor:
        t0 = time.perf_counter()
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        cursor.execute("CREATE INDEX bench_case_question_trgm ON cases_case USING gin (UPPER(question) gin_trgm_ops)")
        cursor.execute("CREATE INDEX bench_case_slug_trgm ON cases_case USING gin (UPPER(slug::text) gin_trgm_ops)")
        cursor.execute("ANALYZE cases_case")
        cursor.execute("SELECT pg_size_pretty(pg_relation_size('bench_case_question_trgm'))")
        size = cursor.fetchone()[0]
    print(f"  built in {time.perf_counter() - t0:.1f} s, question index {size}")
    for label, url in requests.items():
        if label.startswith("search"):
            print(f"  {label:36} DEBUG off: {ms(timed(url))} ms")
            if not args.no_explain:
                with CaptureQueriesContext(connection) as queries:
                    get(url)
                with connection.cursor() as cursor:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + main_query(queries.captured_queries))
                    plan = "\n      ".join(row[0] for row in cursor.fetchall())
                print(f"      {plan}")

    print("\nexperiment: an index on cases_case (updated_at) for similar._stamp()")
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX bench_case_updated ON cases_case (updated_at)")
        cursor.execute("ANALYZE cases_case")
    stamp_times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        similar._stamp()
        stamp_times.append((time.perf_counter() - t0) * 1000)
    print(f"  _stamp() as is: {ms(stamp_times)} ms (count(*) still scans a whole index)")
    stamp_times = []
    with connection.cursor() as cursor:
        for _ in range(args.runs):
            t0 = time.perf_counter()
            cursor.execute("SELECT max(updated_at), max(id) FROM cases_case")
            cursor.fetchone()
            stamp_times.append((time.perf_counter() - t0) * 1000)
    print(f"  without count(*): SELECT max(updated_at), max(id): {ms(stamp_times)} ms")


def main_query(queries: list[dict]) -> str:
    return next(q["sql"] for q in queries if 'FROM "cases_case"' in q["sql"] and "LIMIT 26" in q["sql"])


def explain(sqls: dict[str, list[dict]], connection) -> None:
    for label, queries in sqls.items():
        if label == "case page":
            continue
        sql = main_query(queries)
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plan = "\n    ".join(row[0] for row in cursor.fetchall())
        print(f"\nEXPLAIN ANALYZE, {label}:\n    {plan}")


def explain_keyset(reviewer, after: str, connection, label: str, **filters) -> None:
    """The same deep page with the keyset written so that PostgreSQL can seek the index
    (suggestions, not what the view does today): one row comparison, or the OR form
    behind a redundant ``updated_at <= key`` that the index can use as a bound."""
    from django.db.models import Q
    from django.db.models.fields.tuple_lookups import Tuple, TupleLessThan

    from cases.models import Case, CaseStatus
    from cases.views.review import _decode_cursor

    key, pk = _decode_cursor(after)
    forms = {
        "(updated_at, id) < (key, id)  [TupleLessThan(Tuple('updated_at', 'id'), cursor)]": TupleLessThan(
            Tuple("updated_at", "id"), (key, pk)
        ),
        "updated_at <= key AND (updated_at < key OR id < id)  [plain Q]": Q(updated_at__lte=key)
        & (Q(updated_at__lt=key) | Q(id__lt=pk)),
    }
    for name, condition in forms.items():
        qs = (
            Case.objects.exclude(proposer=reviewer)
            .filter(status=CaseStatus.PROPOSED, **filters)
            .filter(condition)
            .select_related("proposer")
            .order_by("-updated_at", "-id")
            .only(
                "slug", "question", "tags", "status", "source_kind", "updated_at", "content_hash", "proposer__username"
            )
        )[:26]
        sql, params = qs.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = "\n    ".join(row[0] for row in cursor.fetchall())
        print(f"\nEXPLAIN ANALYZE, {label} with {name}:\n    {plan}")


def similar_bench(similar, connection, args) -> None:
    from django.test.utils import CaptureQueriesContext

    from cases.models import Case

    existing = Case.objects.order_by("id").values_list("slug", "question")[args.n // 2]
    queries = {
        "an existing question": existing[1],
        "a reworded existing question": existing[1].replace("?", "").rsplit(" ", 2)[0] + " please?",
        "an unrelated question": "What is the maximum upload size for the quarterly compliance report portal?",
    }
    print("\nsimilar_questions over the corpus")
    similar._cache.update(stamp=None, slugs=[], questions=[])
    t0 = time.perf_counter()
    hits = similar.similar_questions(queries["an existing question"], exclude=existing[0])
    print(f"  first call (cold: read + normalise {args.n:,} questions): {(time.perf_counter() - t0) * 1000:.0f} ms")
    stamp_times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        similar._stamp()
        stamp_times.append((time.perf_counter() - t0) * 1000)
    print(f"  _stamp() alone (count(*), max(updated_at), max(id) each call): {ms(stamp_times)} ms")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) SELECT count(*), max(updated_at), max(id) FROM cases_case")
        plan = "\n      ".join(row[0] for row in cursor.fetchall())
    print(f"    {plan}")
    _slugs, questions = similar._corpus()
    from rapidfuzz import fuzz, process

    for label, question in queries.items():
        query = similar.normalize(question)
        for _ in range(3):
            similar.similar_questions(question, exclude=existing[0])
        total, extract = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            hits = similar.similar_questions(question, exclude=existing[0])
            total.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            process.extract(query, questions, scorer=fuzz.ratio, limit=50, score_cutoff=similar.PREFILTER_CUTOFF)
            extract.append((time.perf_counter() - t0) * 1000)
        with CaptureQueriesContext(connection) as ctx:
            similar.similar_questions(question, exclude=existing[0])
        print(f"  warm, {label}: {ms(total)} ms, {len(ctx.captured_queries)} query, {len(hits)} hits")
        print(f"    of which process.extract(ratio, cutoff {similar.PREFILTER_CUTOFF}) alone: {ms(extract)} ms")


if __name__ == "__main__":
    main()
