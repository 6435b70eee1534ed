"""The image (issue 13 part 1; O4: what the chart runs), tested as far as it can be without
building one.

This reads what the build reads (``tests/image`` builds the image and runs it): the
``Dockerfile`` (build and runtime stages; the runtime one installs git and openssh-client, copies
the environment built from ``constraints.txt`` and runs as a numeric non-root user), the
``.dockerignore`` (an allowlist: the sandbox, the tests and every cache stay out of the build
context), and the installed package's entry points (every console script the Procfile names
exists). ``tests/integration/image/test_build_context.py`` builds the wheel from exactly the
files the build context admits; ``tests/e2e/test_console_scripts_e2e.py`` starts every console
script, Procfile entry and chart command with only the runtime dependencies importable
(outside check 7).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from importlib import metadata

from sandbox.paths import REPO_ROOT
from sandbox.processes import procfile

DISTRIBUTION = "gitops-reverser"
#: The console scripts of the product; the chart names the same (issue 13).
SCRIPTS = {
    "gitops-reverser-receiver",
    "gitops-reverser-watcher",
    "gitops-reverser-branch-worker",
    "gitops-reverser-dispatcher",
}
#: The operator's command (docs/cli.md) under its own name and kubectl's plugin name: a tool,
#: not a process, so no Procfile entry runs it.
TOOLS = {"gitops-reverser", "kubectl-gitops_reverser"}


@dataclass
class Stage:
    """One ``FROM`` of the Dockerfile and its instructions (keyword, arguments)."""

    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]


def stages(text: str) -> list[Stage]:
    """The Dockerfile's stages, with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    found: list[Stage] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            found.append(Stage(words[0], name))
        elif found:
            found[-1].instructions.append((keyword, rest.strip()))
    return found


def dockerfile() -> list[Stage]:
    return stages((REPO_ROOT / "Dockerfile").read_text())


def _pattern(glob: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regular expression (Go's filepath.Match plus ``**``)."""
    glob = glob.strip("/")
    out = ""
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(out + r"\Z")


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``path`` out of the build context: the last pattern that matches
    the path or one of its parent folders decides, ``!`` re-including."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for line in patterns:
        negated = line.startswith("!")
        regex = _pattern(line[1:] if negated else line)
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


def dockerignore() -> list[str]:
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def test_the_matcher_follows_docker_semantics() -> None:
    """The helper itself: a later ``!`` re-includes, a folder pattern covers its files."""
    patterns = ["*", "!keep/", "**/__pycache__"]
    assert ignored("drop.txt", patterns) and ignored("drop/deep/file", patterns)
    assert not ignored("keep/a/b.py", patterns)
    assert ignored("keep/a/__pycache__/b.pyc", patterns)


def test_the_build_context_keeps_the_sandbox_tests_and_caches_out() -> None:
    patterns = dockerignore()
    for path in (
        "sandbox/kube/server.py",
        "tests/unit/test_image.py",
        "docs/architecture.md",
        "bench/fleet.py",
        "charts/gitops-reverser/Chart.yaml",
        ".venv/bin/python",
        ".git/HEAD",
        ".demo/logs/watcher.log",
        ".mypy_cache/3.11/x.json",
        "shared/__pycache__/health.cpython-311.pyc",
        "services/receiver/__pycache__/app.cpython-311.pyc",
        "shared/.ruff_cache/x",
    ):
        assert ignored(path, patterns), f"{path} would be sent to the build"


def test_the_build_context_holds_what_the_image_installs() -> None:
    patterns = dockerignore()
    for path in (
        "pyproject.toml",
        "constraints.txt",
        "README.md",
        "shared/health.py",
        "shared/store/keys.py",
        "services/receiver/gunicorn.conf.py",
        "services/watcher/__main__.py",
    ):
        assert not ignored(path, patterns), f"{path} is missing from the build context"
    copies = [rest.split() for stage in dockerfile() for rest in stage.args("COPY")]
    sources = {src for words in copies if not words[0].startswith("--from") for src in words[:-1]}
    assert {"pyproject.toml", "constraints.txt", "shared", "services"} <= sources
    for source in sources:
        assert not ignored(source, patterns), f"COPY {source}: not in the build context"


def test_the_dockerfile_has_a_build_and_a_runtime_stage() -> None:
    build, *_, runtime = dockerfile()
    assert build.name == "build" and runtime.name == "runtime"
    installs = " ".join(build.args("RUN"))
    assert re.search(r"pip install -c constraints\.txt \.", installs), installs
    assert any(rest.startswith("--from=build ") for rest in runtime.args("COPY"))
    assert not runtime.args("ENTRYPOINT"), "the command chooses the process"


def test_the_runtime_runs_as_a_numeric_non_root_user() -> None:
    runtime = dockerfile()[-1]
    [user] = runtime.args("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0, user
    assert gid == "" or (gid.isdigit() and int(gid) > 0), user


def test_the_runtime_has_git_and_openssh_client() -> None:
    runtime = dockerfile()[-1]
    words = {word for rest in runtime.args("RUN") for word in shlex.split(rest)}
    assert {"git", "openssh-client"} <= words


def test_the_runtime_writes_only_under_tmp() -> None:
    """Read-only root friendly: HOME, TMPDIR and the branch worker's clones are under /tmp
    (the chart mounts an emptyDir there)."""
    env = " ".join(dockerfile()[-1].args("ENV"))
    for setting in ("HOME=/tmp", "TMPDIR=/tmp", "GITOPS_REVERSER_WORK_DIR=/tmp/"):
        assert setting in env, env


def _console_scripts() -> dict[str, metadata.EntryPoint]:
    found = metadata.entry_points(group="console_scripts")
    return {ep.name: ep for ep in found if ep.dist and ep.dist.name == DISTRIBUTION}


def _procfile_commands() -> dict[str, str]:
    """The first word of each Procfile command."""
    return {name: shlex.split(cmd)[0] for name, cmd in procfile().items()}


def test_every_process_of_the_procfile_is_an_installed_console_script() -> None:
    scripts = _console_scripts()
    commands = _procfile_commands()
    ours = {name: cmd for name, cmd in commands.items() if name != "dashboard"}
    assert set(ours.values()) == SCRIPTS == set(scripts) - TOOLS, (ours, sorted(scripts))
    for tool in TOOLS:
        assert callable(scripts[tool].load()), tool
    for command in ours.values():
        assert callable(scripts[command].load()), command
    assert commands["dashboard"] == "rq-dashboard"
    assert "rq-dashboard" in {ep.name for ep in metadata.entry_points(group="console_scripts")}


def test_each_console_script_runs_its_process_main() -> None:
    scripts = _console_scripts()
    for name, module in (
        ("gitops-reverser-receiver", "services.receiver.__main__"),
        ("gitops-reverser-watcher", "services.watcher.__main__"),
        ("gitops-reverser-branch-worker", "services.branch_worker.__main__"),
        ("gitops-reverser-dispatcher", "services.dispatcher.__main__"),
    ):
        assert scripts[name].value == f"{module}:main"


def test_the_receiver_script_hands_gunicorn_the_config_file_of_the_package() -> None:
    from services.receiver.__main__ import APP, CONFIG, argv

    assert CONFIG.relative_to(REPO_ROOT).as_posix() == "services/receiver/gunicorn.conf.py"
    assert argv(["--workers", "1"]) == [
        "gitops-reverser-receiver",
        "-c",
        str(CONFIG),
        "--workers",
        "1",
        APP,
    ]
