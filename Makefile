# Conveniences around ./dev, which needs nothing but Python.
.PHONY: run test lint bench
run:
	./dev run
test:
	./dev test
lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
bench:
	.venv/bin/python benchmarks/run_all.py
