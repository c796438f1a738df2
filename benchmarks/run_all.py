"""Run every benchmark, one after the other: ``.venv/bin/python benchmarks/run_all.py [--quick]``.

Each benchmark reports its figures as ratios against a floor measured in the same run,
because these machines are shared and noisy. ``--quick`` uses smaller sizes.
"""

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHMARKS = [
    ("scoring", ["bench_scoring.py"], ["--n", "20000"]),
    ("import and export", ["bench_import_export.py"], ["--n", "20000", "--repeat", "1"]),
    ("discrimination checks", ["bench_checks.py"], ["--cases", "100"]),
    ("review queue", ["bench_queue.py"], ["--n", "10000"]),
    ("near-duplicates", ["bench_neardup.py"], ["--n", "20000"]),
    ("leakage", ["bench_leakage.py"], ["--cases", "20000", "--mb", "2"]),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("names", nargs="*", help="only these (by file name without bench_ and .py)")
    args = parser.parse_args()
    failed = []
    for title, script, quick_args in BENCHMARKS:
        name = script[0].removeprefix("bench_").removesuffix(".py")
        if args.names and name not in args.names:
            continue
        print(f"\n=== {title} ===", flush=True)
        command = [sys.executable, str(HERE / script[0]), *(quick_args if args.quick else [])]
        if subprocess.run(command).returncode != 0:
            failed.append(title)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
