# fusedlib: a plain venv + pip (conda is not needed; environment.yml is for conda users).
#
#   make book      build the book from the rows in DATA (default data/; no GPU, no credentials)
#   make test      the test suite on CPU (what .ci/run calls)
#   make run-all   run the experiment notebooks (resumable; variables below)
#   make lab       JupyterLab with the notebooks paired to their jupytext .py sources
#   make venv      create .venv (python3 -m venv) with the project and every extra installed
#   make wheels    download the wheels run-all needs on a machine without package access (.whl/)
#   make clean     remove _build/ (the built book, executed notebooks)
#   make help      this list
#
# run-all variables: PROFILE (full|smoke; default: full on a CUDA machine or Modal, else
# smoke), EXPERIMENTS (e.g. "capacity scale"; default: all), CONFIGS (e.g. "part10": only
# these configurations in the notebooks that take them; default: each notebook's), ROUNDS
# (paired rounds; default: each plan's), TIME_LIMIT (seconds for the whole call, 0: none),
# OUT_DIR (default: data/ for full, data-smoke/ for smoke), BACKEND (modal|local; default:
# modal with a Modal token, else local), GPU (Modal's GPU type, default H100: the card of the
# rows in data/; A10 is the reference's), SYSTEM_PYTHON=1 (use the python3 already there
# instead of a venv, with the wheels in .whl/ installed into /tmp/site).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Reinstall when the project's dependency list changes.
STAMP  := $(VENV)/.fusedlib-installed

PROFILE     ?=
EXPERIMENTS ?= gates census attention capacity peer scale soak kernels
ROUNDS      ?=
CONFIGS     ?=
TIME_LIMIT  ?= 0
OUT_DIR     ?=
BACKEND     ?=
GPU         ?= H100
DATA        ?= data
EXECUTED    := _build/executed

ifeq ($(SYSTEM_PYTHON),1)
RUN_PY  := PYTHONPATH=/tmp/site:$(CURDIR) $(PYTHON)
RUN_DEP :=
else
RUN_PY  := $(BIN)/python
RUN_DEP := $(STAMP)
endif

.PHONY: help venv book test run-all lab wheels clean
help:
	@sed -n '3,/^SHELL/{/^SHELL/d; s/^# \{0,1\}//p;}' Makefile

venv: $(STAMP)
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[bench,book,test]'
	@# Notebook kernels started by the book build and papermill: no TCP-transport notice.
	@mkdir -p $(VENV)/etc/ipython
	@echo 'c.IPKernelApp.log_level = "ERROR"' > $(VENV)/etc/ipython/ipython_kernel_config.py
	@touch $@

# --quiet: Sphinx's progress log; warnings and errors still print. Pages read rows from
# $FUSEDLIB_DATA (make book DATA=data-smoke shows a smoke run's rows). A rows folder that does
# not exist stops make before any work; a book from another folder than data/ is written
# beside the published one, under _build/<folder>/, never over it.
ifneq ($(filter book,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(DATA)/.),)
$(error DATA=$(DATA): no such rows folder)
endif
endif
BOOK_OUT := $(if $(filter $(abspath data),$(abspath $(DATA))),.,_build/$(notdir $(abspath $(DATA))))
book: $(STAMP)
	FUSEDLIB_DATA=$(abspath $(DATA)) $(BIN)/jupyter-book build . --path-output $(BOOK_OUT) --all -W -n \
	  --keep-going --quiet
	@echo
	@echo "Built from the rows in $(DATA): file://$(abspath $(BOOK_OUT))/_build/html/index.html"

# Two worker processes (pytest-xdist), longest tests first (tests/conftest.py).
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# fusedlib.bench.runall checks every value first (a wrong one is named in one line), skips a
# notebook whose planned runs all have rows, runs the others with papermill (or, without
# papermill, as scripts), and prints the device it actually uses.
run-all: $(RUN_DEP)
ifeq ($(SYSTEM_PYTHON),1)
	@if ls .whl/*.whl >/dev/null 2>&1; then $(PYTHON) -m pip install -q --no-index --no-deps --no-compile \
	  --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; fi
endif
	$(RUN_PY) -m fusedlib.bench.runall --time-limit $(TIME_LIMIT) --gpu $(GPU) --executed $(EXECUTED) \
	  $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(CONFIGS),--configs "$(CONFIGS)") \
	  $(if $(PROFILE),--profile $(PROFILE)) $(if $(OUT_DIR),--out-dir $(OUT_DIR)) \
	  $(if $(BACKEND),--backend $(BACKEND)) --experiments "$(EXPERIMENTS)"

# What papermill and jupytext need beyond what the GPU machine's Python 3.12 has (its
# torch, numpy, pandas, pyyaml, requests, tqdm, click, attrs, jinja2...), for
# `make run-all SYSTEM_PYTHON=1` there: carry .whl/ with the tree (about 15 MB).
WHEELS := papermill==2.7.0 jupytext==1.19.6 ipykernel==7.4.0 comm==0.2.3 debugpy==1.8.22 ipython==9.18.1 \
	ipython-pygments-lexers==1.1.1 jedi==0.20.1 parso==0.8.7 jupyter-client==8.10.0 jupyter-core==5.9.1 \
	matplotlib-inline==0.2.2 nbclient==0.11.0 nbformat==5.11.1 nest-asyncio2==1.7.4 pyzmq==27.3.0 tenacity==9.2.1 \
	tornado==6.6.1 traitlets==5.16.1 entrypoints==0.4.2 mdit-py-plugins==0.7.0 markdown-it-py==4.3.0 mdurl==0.1.2 \
	fastjsonschema==2.22.3 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 \
	rpds-py==2026.9.1 pexpect==4.9.0 ptyprocess==0.7.0 platformdirs==4.14.9 prompt-toolkit==3.0.53 wcwidth==0.9.4 \
	stack-data==0.6.3 asttokens==3.0.2 executing==2.3.0 pure-eval==0.2.4
wheels:
	@mkdir -p .whl
	$(PYTHON) -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $(WHEELS)

# The notebooks' headers are what `jupytext --sync` writes (tests/bench/test_notebooks.py), so
# pairing leaves the tree clean; the paired .ipynb files are ignored. Root needs --allow-root.
lab: $(STAMP)
	$(BIN)/jupytext --sync notebooks/*.py
	$(BIN)/jupyter lab --notebook-dir=. $(if $(filter 0,$(shell id -u)),--allow-root)

clean:
	rm -rf _build
