# TraceCup: the two commands (`make demo`, `make test`) and friends.
# Everything runs from a project-local virtual environment: `make demo` installs the runtime
# (requirements.txt), `make test` also the development tools (requirements-dev.txt).
# Each stamp is remade when its requirements file (or the runtime one it includes) changes.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo demo-reset test check bench bench-full bench-surge venv clean help

help:
	@echo "make demo   - set up and run the platform with a ready demo contest (web + Celery worker)"
	@echo "make test   - set up and run the whole test suite"
	@echo "make check  - the inner loop (about a minute): ruff and every test not marked slow, integration or browser"
	@echo "make bench  - print the speed and memory figures of the judge and the synthesizer"
	@echo "make bench-full - a 2019-size round through the real pipeline, then the pages under load"
	@echo "make bench-surge - the last minutes of a 2019-size round: every team uploads before the deadline"
	@echo "make demo-reset - delete the demo's data (var/: database, files, broker; .venv stays), then make demo"
	@echo "make clean  - remove the virtual environment and local state (var/)"

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(DEV_STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

# A fresh demo contest: the embedded default keeps everything in var/ (a DATABASE_URL database is not touched).
demo-reset: $(STAMP)
	rm -rf var
	$(PY) manage.py demo

# One test process per core and one more (pytest-xdist; tests/conftest.py gives each its own test database,
# broker and cache databases): the integration and browser tests spend much of their time waiting for real
# workers, servers and Chromium, and the extra process works meanwhile (on 2 cores the whole suite took
# 10 min 14 s with three, 10 min 51 s with two). --dist loadfile keeps a file's tests in one process, so
# module-scoped fixtures (trained models, generated sets) are built once; --no-loadscope-reorder hands
# the files out in collection order, the longest first (tests/conftest.py LONG_FILES).
TEST_PROCESSES := $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 1)")
PARALLEL ?= -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

# The tests keep Python's bytecode caches even where the environment says not to (PYTHONDONTWRITEBYTECODE
# is set on this workplace's machines): pytest rewrites the asserts of every test module at collection, about
# 5 s of CPU in each test process, and keeps the result only in those caches (__pycache__, ignored by git).
# With them a second run collects in half the time.
#
# The test processes and the workers they start keep the memory numpy frees for its next arrays (glibc's
# malloc: no mmap of its own per large array, no return to the system) instead of taking fresh pages from the
# kernel each time: a fresh page costs twice a warm one on these machines (bench.machine's "fresh memory"),
# and the interval coverage tests spent 6.9 of their 28.5 CPU-seconds in the kernel that way, 0.9 of 23.1
# with this. The suite's peaks are measured with tracemalloc, which this does not change.
MALLOC_ENV := MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456
TEST_ENV := PYTHONDONTWRITEBYTECODE= $(MALLOC_ENV)

test: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(TEST_ENV) $(PY) -m pytest $(PARALLEL) --durations=10 $(PYTEST_ARGS)

# The inner loop: the judge's and the synthesizers' tests and the platform's unit and page tests, without
# the ones marked slow (statistical checks, whole rounds), integration (real workers) or browser.
CHECK_MARKERS := not slow and not integration and not browser

# One process per core: these tests compute and do not wait, so a process more than the cores only adds
# its own start (collection and a test database).
CHECK_PARALLEL ?= -n auto --dist loadfile --no-loadscope-reorder

check: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(TEST_ENV) $(PY) -m pytest $(CHECK_PARALLEL) -q -m "$(CHECK_MARKERS)" $(PYTEST_ARGS)

bench: $(DEV_STAMP)
	$(PY) -m bench.machine
	$(PY) -m bench.judge
	$(PY) -m bench.algorithms
	$(PY) -m bench.synthesizer
	$(PY) -m bench.hostile

bench-full: $(DEV_STAMP)
	$(PY) -m bench.full $(BENCH_ARGS)

bench-surge: $(DEV_STAMP)
	$(PY) -m bench.surge $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var
