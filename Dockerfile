# One image for every process of gitops-reverser; the command chooses the process:
#   gitops-reverser-receiver | gitops-reverser-watcher | gitops-reverser-branch-worker |
#   gitops-reverser-dispatcher | rq-dashboard
# Settings come from GITOPS_REVERSER_* variables (shared/settings.py). The root filesystem may
# be read-only: every process writes only under /tmp (the branch worker's clones,
# GITOPS_REVERSER_WORK_DIR; SSH key files; gunicorn's worker files; PROMETHEUS_MULTIPROC_DIR),
# so mount an emptyDir there.

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
RUN /opt/gitops-reverser/bin/pip install -c constraints.txt . \
    && /opt/gitops-reverser/bin/python -m compileall -q /opt/gitops-reverser

# --- runtime: no compiler, no pip cache, not root -----------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client \
    && rm -rf /var/lib/apt/lists/* \
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
# The receiver's webhooks (GITOPS_REVERSER_RECEIVER_BIND) and the chart's metrics port.
EXPOSE 8080 9090
CMD ["gitops-reverser-watcher"]
