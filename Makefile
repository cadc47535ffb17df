# fusedlib: a plain venv + pip (conda is not needed; environment.yml is for conda users).
#
#   make book      build the book from the committed data/ (no GPU, no credentials)
#   make test      the test suite (what .ci/run calls)
#   make run-all   execute every experiment notebook with papermill
#   make lab       JupyterLab with the notebooks paired to their jupytext .py sources
#
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Reinstall when the project's dependency list changes.
STAMP  := $(VENV)/.fusedlib-installed

# run-all: Modal when a token is configured (~/.modal.toml or MODAL_TOKEN_ID), else local.
HAVE_MODAL_TOKEN := $(shell { [ -n "$$MODAL_TOKEN_ID" ] || grep -qs 'token_id' "$$HOME/.modal.toml"; } && echo yes)
BACKEND ?= $(if $(HAVE_MODAL_TOKEN),modal,local)
# Modal's name for the GPU the reference measured on; override with GPU=H100 etc.
GPU ?= A10
# full on Modal or on a local CUDA machine; smoke (tiny model, CPU) otherwise.
PROFILE ?= $(shell if [ "$(BACKEND)" = modal ]; then echo full; \
	elif [ -x $(BIN)/python ] && $(BIN)/python -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then echo full; \
	else echo smoke; fi)
# The smoke profile never writes over the published rows.
OUT_DIR ?= $(if $(filter smoke,$(PROFILE)),data-smoke,data)
NOTEBOOKS ?= $(sort $(wildcard notebooks/*.py))
EXECUTED  := _build/executed

.PHONY: help venv book test run-all lab clean
help:
	@sed -n 's/^#   //p' Makefile

venv: $(STAMP)
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[bench,book,test]'
	@# Notebook kernels started by the book build and papermill: no TCP-transport notice.
	@mkdir -p $(VENV)/etc/ipython
	@echo 'c.IPKernelApp.log_level = "ERROR"' > $(VENV)/etc/ipython/ipython_kernel_config.py
	@touch $@

# --quiet: Sphinx's progress log, which includes myst's and myst-nb's whole parser
# configuration (MdParserConfig(...), NbParserConfig(...)); warnings and errors still print.
book: $(STAMP)
	$(BIN)/jupyter-book build . --all -W -n --keep-going --quiet
	@echo
	@echo "Open the book: file://$(CURDIR)/_build/html/index.html"

# Two worker processes (pytest-xdist), longest tests first (tests/conftest.py). The notebooks
# execute once whichever workers their two tests land on (the smoke_rows fixture in
# tests/test_book.py): --dist loadgroup's xdist_group does not hold with pytest 9.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# Each notebook's .py is the source: jupytext makes the .ipynb, papermill injects the
# parameters and executes it; executed copies land in $(EXECUTED), rows in $(OUT_DIR).
run-all: $(STAMP)
	@mkdir -p $(EXECUTED)/src $(OUT_DIR)
	@# Rows written anywhere but data/ are scratch: keep them out of git.
	@[ "$(OUT_DIR)" = data ] || echo '*' > $(OUT_DIR)/.gitignore
	@echo "run-all: backend=$(BACKEND) profile=$(PROFILE) gpu=$(GPU) out_dir=$(OUT_DIR)"
	@set -e; for nb in $(NOTEBOOKS); do \
	  name=$$(basename $$nb .py); \
	  $(BIN)/jupytext --quiet --to ipynb --output $(EXECUTED)/src/$$name.ipynb $$nb; \
	  echo "== $$name"; \
	  $(BIN)/papermill --log-level WARNING -k python3 --cwd notebooks \
	    $(EXECUTED)/src/$$name.ipynb $(EXECUTED)/$$name.ipynb \
	    -p backend $(BACKEND) -p gpu $(GPU) -p profile $(PROFILE) -p out_dir "$(CURDIR)/$(OUT_DIR)"; \
	done
	@echo "Executed notebooks: $(EXECUTED)/  rows: $(OUT_DIR)/"

# The notebooks' headers are what `jupytext --sync` writes (tests/bench/test_notebooks.py), so
# pairing leaves the tree clean; the paired .ipynb files are ignored. Root (a container's
# usual user) needs --allow-root.
lab: $(STAMP)
	$(BIN)/jupytext --sync $(NOTEBOOKS)
	$(BIN)/jupyter lab --notebook-dir=. $(if $(filter 0,$(shell id -u)),--allow-root)

clean:
	rm -rf _build

# The built book as a reader meets it: no nan/None/placeholder/unparsed markup in any page's
# text, and (headless Chromium) no table or figure wider than the content column; one
# screenshot per page in _build/pages/. Fails without chromium rather than passing unchecked.
.PHONY: check-pages
check-pages: $(STAMP)
	$(BIN)/python -m fusedlib.bench.pagecheck _build/html --screenshots _build/pages
