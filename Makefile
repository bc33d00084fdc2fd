# Two commands for a fresh machine: `make demo` and `make test` (both run `make setup`).
# `make test` runs every test; `make test-fast` leaves out those marked slow (over 5 s each).
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
AZURITE := azurite@3.37.0
S3RVER := s3rver@3.7.1
AZURITE_STAMP := $(VENV)/node/.installed-stamp
DEMO   := demo-output

.PHONY: setup demo test test-fast docs lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
		python=$$(sh .ci/find-python) || exit 1; \
		echo "creating $(VENV) with $$python"; \
		rm -rf $(VENV); "$$python" -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@# the bytecode an installed wheel has, written even where PYTHONDONTWRITEBYTECODE is set:
	@# without it every command compiles the package's sources again (about 0.1 s a process)
	$(PY) -m compileall -q mzpeak_dask
	@touch $(STAMP)

# Azurite, the Azure blob emulator the az:// tests start, and s3rver, a second S3-compatible
# server (Node servers, from npm); the tests and bench_remote need them, the demo does not
$(AZURITE_STAMP): Makefile
	npm install --prefix $(VENV)/node --no-audit --no-fund --loglevel=error $(AZURITE) $(S3RVER)
	@touch $(AZURITE_STAMP)

demo: setup
	@mkdir -p $(DEMO)
	$(VENV)/bin/mzpeak-dask convert tests/data/small.mzML $(DEMO)/small.mzpeak --overwrite --workers 2
	$(VENV)/bin/mzpeak-dask info $(DEMO)/small.mzpeak

# the thermo extra (fisher-py); its tests also need Mono (.ci/install-mono), else they skip
THERMO_STAMP := $(VENV)/.thermo-stamp
$(THERMO_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[thermo]'
	@touch $(THERMO_STAMP)

test: setup $(AZURITE_STAMP) $(THERMO_STAMP)
	$(PY) -m pytest -q

test-fast: setup $(AZURITE_STAMP) $(THERMO_STAMP)
	$(PY) -m pytest -q -m "not slow"

# the documentation site (docs/, mkdocs.yml) into site/; a warning is an error
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

lint: setup
	$(VENV)/bin/ruff check mzpeak_dask tests workflows docs

clean:
	rm -rf $(VENV) $(DEMO) site .pytest_cache .hypothesis
