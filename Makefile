# Every target creates .venv first when it is missing (or when the dependency files changed).
# The TFF install route (TFF 0.87.0 with --no-deps; jax 0.4.14 + jaxlib 0.4.13) lives here
# and in constraints.txt, nowhere else.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
TFF := tensorflow-federated==0.87.0
PYTHON ?= $(shell for p in python3.11 python3.10 python3.9 python3; do \
	  c=$$(command -v $$p) || continue; \
	  $$c -c 'import sys; sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 11) else 1)' 2>/dev/null && { echo $$c; break; }; \
	done)
PYTEST_FLAGS ?=
REPRO_OUT ?= runs
REPORT ?= $(REPRO_OUT)

.PHONY: test test-slow test-all bench reproduce docs docs-results docs-serve venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: setup.cfg constraints.txt
	@if [ -z "$(PYTHON)" ]; then \
	  echo "error: TensorFlow Federated 0.87 needs Python 3.9-3.11 and none was found on PATH."; \
	  echo "       Install python3.11 (e.g. pyenv install 3.11) or run: make PYTHON=/path/to/python3.11"; \
	  exit 1; fi
	@[ -x $(PY) ] || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade "pip>=23,<25" wheel "setuptools>=61"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	$(PY) -m pip install --quiet --no-deps $(TFF)
	$(PY) -c "import tensorflow_federated, tensorflow_addons, keras_tuner, neurokit2; print('stack OK: tff', tensorflow_federated.__version__)"
	@touch $@

test: venv
	$(PY) -m pytest -m "not slow" -q $(PYTEST_FLAGS)

# The slow tests include the reservoirpy round trip: the [reservoirpy] extra (0.3.13) installs here.
test-slow: venv
	$(PY) -m pip install --quiet -c constraints.txt -e ".[reservoirpy]"
	$(PY) -m pytest -m slow -q $(PYTEST_FLAGS)

test-all: venv
	$(PY) -m pytest -q $(PYTEST_FLAGS)

bench: venv
	$(PY) -m pip install --quiet -c constraints.txt -e ".[bench]"
	$(PY) -m bench

# The docs site (docs/, mkdocs.yml): --strict fails on a broken link, an unresolved reference or a
# docstring that does not render. The silenced notices are the MkDocs 2 / Material end-of-life banners.
MKDOCS := NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs

$(VENV)/.docs-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -c constraints.txt -e ".[docs]"
	@touch $@

docs: $(VENV)/.docs-installed
	$(MKDOCS) build --strict --site-dir site

# The results snapshots the docs pages show (docs/results/), from a finished `make reproduce`.
docs-results: venv
	$(PY) -m scripts.docs_results $(REPORT)

docs-serve: $(VENV)/.docs-installed
	$(MKDOCS) serve

reproduce: venv
	$(PY) -m tff_esn reproduce all --profile quick --out $(REPRO_OUT)

clean:
	rm -rf $(VENV) .pytest_cache build site *.egg-info
