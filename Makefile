# Two entry points, each bootstrapping its own virtual environment (idempotent: the environment is
# (re)built only when pyproject.toml changes).
#   make train ARGS="aggregator=gaussian_pate"    python train.py on the built-in synthetic data
#   make test  ARGS="-m 'not slow'"               `ruff format --check`, then the test suite, one worker per core
#                                                 (the fast loop: not slow)
#   make audit                                    the privacy audits (tests/audit), one worker per core
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help train test audit bench clean-cache

help:  # `make` alone: what the targets do
	@echo 'make train [ARGS="key=value ..."]   set up .venv (first time only), run python train.py on the synthetic data'
	@echo 'make test  [ARGS="-m '"'"'not slow'"'"'"]   set up .venv (first time only), run the test suite (all of it by default)'
	@echo 'make audit [ARGS=...]                set up .venv (first time only), run the privacy audits (tests/audit)'
	@echo 'make bench [ARGS=...]                run benchmarks/mechanisms.py'
	@echo 'make clean-cache                     delete cache/ (every stage is rebuilt on the next run)'

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

train: $(STAMP)
	$(PY) train.py $(ARGS)

test: $(STAMP)
	$(VENV)/bin/ruff format --check --quiet .
	$(PY) -m pytest -n auto --dist worksteal $(ARGS)

audit: $(STAMP)
	$(PY) -m pytest --audit -n auto --dist loadgroup $(ARGS)

bench: $(STAMP)
	$(PY) benchmarks/mechanisms.py $(ARGS)

clean-cache:
	rm -rf cache
