# Two entry points, each bootstrapping its own virtual environment (idempotent: the environment is
# (re)built only when pyproject.toml changes).
#   make train ARGS="aggregator=gaussian_pate"    python train.py on the built-in synthetic data
#   make test  ARGS="-m 'not slow'"               the test suite, one worker per core (the fast loop: not slow)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: train test bench clean-cache

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

train: $(STAMP)
	$(PY) train.py $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -n auto --dist worksteal $(ARGS)

bench: $(STAMP)
	$(PY) benchmarks/mechanisms.py $(ARGS)

clean-cache:
	rm -rf cache
