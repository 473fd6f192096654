# TraceCup: the two commands (`make demo`, `make test`) and friends.
# Everything runs from a project-local virtual environment built from requirements.txt.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench venv clean help

help:
	@echo "make demo   - set up and run the platform with a ready demo contest (web + Celery worker)"
	@echo "make test   - set up and run the whole test suite"
	@echo "make bench  - print the speed and memory figures of the judge and the synthesizer"
	@echo "make clean  - remove the virtual environment and local state (var/)"

venv: $(STAMP)

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m scoring.bench
	$(PY) -m scoring.algorithms.bench
	$(PY) -m synth.bench

clean:
	rm -rf $(VENV) var
