# One image for every process of gitops-reverser; the command chooses the process:
#   gitops-reverser-receiver | gitops-reverser-watcher | gitops-reverser-branch-worker |
#   gitops-reverser-dispatcher | rq-dashboard
# Settings come from GITOPS_REVERSER_* variables (shared/settings.py). The root filesystem may
# be read-only: every process writes only under /tmp (the branch worker's clones,
# GITOPS_REVERSER_WORK_DIR; SSH key files; gunicorn's worker files; PROMETHEUS_MULTIPROC_DIR),
# so mount an emptyDir there.
#
# Built anywhere from python:3.11-slim-bookworm (the default), or, where no registry can be
# pulled from, from a Debian root filesystem (`make image`, scripts/build-image:
# PYTHON_IMAGE=localhost/python-base:3.11-bookworm). The same recipe either way.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the project and its pinned dependencies in a virtual environment -----------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/gitops-reverser
WORKDIR /src
COPY constraints.txt pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
# pip and setuptools only install: they leave the environment before it is compiled and copied.
# kubernetes.aio, the client's asyncio twin (68 MB of the 126 MB the client installs), is
# imported by nothing here (the synchronous client is; tests/image runs every process).
RUN /opt/gitops-reverser/bin/pip install -c constraints.txt . \
    && /opt/gitops-reverser/bin/pip uninstall -y -q pip setuptools \
    && rm -rf /opt/gitops-reverser/lib/python3.*/site-packages/kubernetes/aio \
    && /opt/gitops-reverser/bin/python -m compileall -q /opt/gitops-reverser

# --- sbom: a CycloneDX bill of the environment the runtime copies (`--target sbom`) ------------
FROM build AS sbom
ARG CYCLONEDX_BOM=cyclonedx-bom==7.5.0
RUN python -m venv /opt/sbom \
    && /opt/sbom/bin/pip install -q "${CYCLONEDX_BOM}" \
    && /opt/sbom/bin/cyclonedx-py environment --of JSON --output-reproducible \
        --pyproject /src/pyproject.toml -o /sbom.cdx.json /opt/gitops-reverser/bin/python

# --- runtime: no compiler, no pip, not root ---------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
# git and ssh for the branch worker; redis-server (Debian's, 7.0, BSD-3-Clause) for the chart's
# built-in Redis, so the chart runs one image, pinned as the product is (its package's own
# config, data and log folders are emptied and opened: the chart mounts its config and data,
# and a folder only the redis user may read would hide files from any check of the image). No package installer
# stays behind: the base's own pip (python:*-slim) and the wheels Debian's venv module installs
# from are removed.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client redis-server \
    && rm -rf /etc/redis/* /var/lib/redis/* /var/log/redis/* \
    && chmod 0755 /etc/redis /var/lib/redis /var/log/redis \
    && if python -m pip --version >/dev/null 2>&1; then \
        python -m pip uninstall -y -q pip setuptools wheel; fi \
    && apt-get purge -y --auto-remove python3-venv python3.11-venv python3-pip-whl \
        python3-setuptools-whl \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
    && groupadd --system --gid 10001 gitops-reverser \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin gitops-reverser
COPY --from=build /opt/gitops-reverser /opt/gitops-reverser
ENV PATH=/opt/gitops-reverser/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    GITOPS_REVERSER_WORK_DIR=/tmp/gitops-reverser
WORKDIR /tmp
# Numeric, so the kubelet can check runAsNonRoot without reading /etc/passwd.
USER 10001:10001
# The chart's ports: the receiver's webhooks and metrics (receiver.port), the watcher's, the
# branch worker's and the dispatcher's metrics (*.metricsPort) and rq-dashboard (dashboard.port).
EXPOSE 8080 9090 9091 9092 9181
CMD ["gitops-reverser-watcher"]
# What makes the image: the chart's appVersion (charts/gitops-reverser/Chart.yaml; a test holds
# the two together) and the commit, which scripts/build-image passes. Last, so a new commit
# reuses every layer above.
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="gitops-reverser" \
      org.opencontainers.image.source="https://github.com/gitops-reverser/gitops-reverser" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
