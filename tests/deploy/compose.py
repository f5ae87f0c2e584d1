"""deploy/docker-compose.yml as local processes (there is no Docker engine here): each service's
command, with its environment, as a child of this test, started in ``depends_on`` order.

What changes for one host, and why -- nothing else does:

- a console script (``mqbroker``) runs as this interpreter calling the entry point pyproject
  gives it: the image installs the package; here this checkout's code must run;
- a path under a bind mount is the file it mounts; a path under a named volume is a fresh
  directory of the test's (the processes must not share state with each other or with a
  former run);
- ``listenPort`` and ``metricsPort`` are 0: the compose ports (9876, 10911, ...) may be taken
  on a shared host, e.g. by ``make run``; inside the compose project they never collide,
  since each is held by one service of one shared network namespace;
- ``service:port`` and ``127.0.0.1:port`` -- the network namespace every service shares --
  become ``127.0.0.1:`` and the port the service listening on that compose port really got.

A conf file a command names is copied with those changes into the test's directory; a
healthcheck naming that file reads a copy of it with the listenPort the service really got (in
a container it reads the file its broker read, whose listenPort is the broker's).

A command that is not ours (``/usr/local/bin/etcd`` of etcd's image, its ``etcdctl``) runs as
the host's binary of that name (``make setup`` installs etcd); an address in it that no
service holds yet is its own, on a free port. A service in a profile (``profiles:``) is left
out, as Compose leaves it out when no profile is asked for.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.harness import ROOT, ServerProcess
from tests.ports import free_listen_port

COMPOSE = ROOT / "deploy" / "docker-compose.yml"
VARIABLE = re.compile(r"\$\$|\$\{(\w+)(?::?-([^}]*))?\}")
ADDRESS = re.compile(r"\b([A-Za-z][\w.-]*|127\.0\.0\.1):(\d+)\b")
FREE_KEYS = ("listenPort", "metricsPort")  # taken as 0 (see above)
HEALTH_TIMEOUT = 30.0


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``$$`` in every string of ``value``."""
    if isinstance(value, str):
        return VARIABLE.sub(lambda m: "$" if m[0] == "$$" else env.get(m[1]) or (m[2] or ""), value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def load(env: Mapping[str, str] | None = None, *overlays: Path) -> dict[str, Any]:
    """The compose file as ``docker compose config`` sees it with ``env`` (default: none set,
    so every ``${VAR:-default}`` takes its default), and the ``overlays`` after it (``-f``):
    a service's keys replace the file's, but mappings (healthcheck, depends_on, environment)
    are merged and ``ports`` concatenated, as Compose merges them; new services and top-level
    keys add."""
    config = dict(interpolate(yaml.safe_load(COMPOSE.read_text()), env or {}))
    for path in overlays:
        more = interpolate(yaml.safe_load(path.read_text()), env or {})
        for name, svc in more.pop("services", {}).items():
            base = config["services"].setdefault(name, {})
            for key, value in svc.items():
                if isinstance(value, dict):
                    base[key] = {**base.get(key, {}), **value}
                elif key == "ports":
                    base[key] = [*base.get(key, []), *value]
                else:
                    base[key] = value
        for key, value in more.items():
            config[key] = {**config.get(key, {}), **value}
    return config


def start_order(services: Mapping[str, Any]) -> list[str]:
    """Services in an order where each comes after what it ``depends_on``."""
    done: list[str] = []
    while len(done) < len(services):
        ready = [
            name
            for name, svc in services.items()
            if name not in done and all(d in done for d in svc.get("depends_on", {}))
        ]
        assert ready, f"depends_on has a cycle among {set(services) - set(done)}"
        done += ready
    return done


def entry_points() -> dict[str, str]:
    """pyproject's console scripts: name -> ``module:function``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return dict(project["scripts"])


def python_argv(command: list[str]) -> list[str] | None:
    """``command`` (a console script and its arguments, or ``python3 -m`` a module of ours:
    the image's venv comes first on its PATH) as arguments to this interpreter; None when
    pyproject has no such script."""
    if command[:2] == ["python3", "-m"] and command[2].startswith("aiorocketmq."):
        return command[1:]
    target = entry_points().get(command[0])
    if target is None:
        return None
    module, func = target.split(":")
    code = f"import sys; from {module} import {func}; sys.argv[0] = {command[0]!r}; "
    code += f"sys.exit({func}())"
    return ["-c", code, *command[1:]]


def host_binary(command: list[str]) -> list[str] | None:
    """A command not ours (an image's ``/usr/local/bin/etcd``) as the host's binary of that
    name, with its arguments; None when the host has none."""
    path = shutil.which(Path(command[0]).name)
    return None if path is None else [path, *command[1:]]


class BinaryProcess:
    """A service whose command is a host binary (etcd): its output kept in ``log``."""

    def __init__(self, argv: list[str], env: Mapping[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env},
                                         stdout=out, stderr=subprocess.STDOUT)  # fmt: skip

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; 0 when it ended by that SIGTERM (etcd
        ends so) or exited 0, else its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        return 0 if code == -signal.SIGTERM else code

    def dump(self) -> str:
        return self.log.read_text(errors="replace")


class Project:
    """The compose services as processes, data under ``tmp``."""

    def __init__(
        self, tmp: Path, overlays: tuple[Path, ...] = (), env: Mapping[str, str] | None = None
    ) -> None:
        self.config = load(env, *overlays)
        self.services: dict[str, Any] = {
            name: svc for name, svc in self.config["services"].items() if not svc.get("profiles")
        }
        self.tmp = tmp
        self.procs: dict[str, ServerProcess] = {}
        self.binaries: dict[str, BinaryProcess] = {}  # services whose command is not ours
        self.order: list[str] = []  # services in the order they started
        self.ports: dict[int, int] = {}  # compose listenPort -> the real one
        self.copies: dict[Path, Path] = {}  # a conf file a command named -> its copy

    def mounts(self, service: str) -> dict[str, Path]:
        """Container path -> host path, for each of ``service``'s volumes."""
        found = {}
        for volume in self.services[service].get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith((".", "/")):
                found[target] = (COMPOSE.parent / source).resolve()
            else:
                assert source in self.config["volumes"], f"{service}: undeclared volume {source}"
                found[target] = self.tmp / source
                found[target].mkdir(exist_ok=True)
        for name in self.services[service].get("secrets", []):  # file secrets: bind mounts
            source = Path(self.config["secrets"][name]["file"])
            found[f"/run/secrets/{name}"] = (COMPOSE.parent / source).resolve()
        return found

    def local(self, text: str, mounts: Mapping[str, Path]) -> str:
        """``text`` with paths and addresses as they are on this host."""
        for target, source in mounts.items():
            if text == target or text.startswith(target + "/"):
                return str(source) + text[len(target) :]

        def address(m: re.Match[str]) -> str:
            host, port = m[1], int(m[2])
            if (host in self.services or host == "127.0.0.1") and port in self.ports:
                return f"127.0.0.1:{self.ports[port]}"
            return m[0]

        return ADDRESS.sub(address, text)

    def conf(self, service: str, path: Path, mounts: Mapping[str, Path]) -> tuple[Path, int]:
        """A copy of conf file ``path`` for this host; its compose listenPort."""
        lines, port = [], 0
        for line in path.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and not line.startswith("#"):
                if key.strip() == "listenPort":
                    port = int(value)
                value = "0" if key.strip() in FREE_KEYS else self.local(value.strip(), mounts)
            lines.append(f"{key}{sep}{value}")
        copy = self.tmp / f"{service}.conf"
        copy.write_text("\n".join(lines) + "\n")
        return copy, port

    def start(self, service: str) -> ServerProcess:
        """``service``'s command as a process, listening; its compose port mapped."""
        svc, mounts = self.services[service], self.mounts(service)
        env = {k: self.local(str(v), mounts) for k, v in svc.get("environment", {}).items()}
        if service not in self.order:
            self.order.append(service)
        command, port = [self.local(arg, mounts) for arg in svc["command"]], 0
        for i, arg in enumerate(command):
            if arg.endswith(".conf") and Path(arg).is_file():
                copy, port = self.conf(service, Path(arg), mounts)
                self.copies[Path(arg)] = copy  # until it listens: then the healthcheck's
                command[i] = str(copy)
        argv = python_argv(command)
        assert argv is not None, f"{service}: {command[0]} is not a console script of ours"
        proc = self.procs[service] = ServerProcess(argv, env=env)
        self.ports[port] = proc.listening_port()
        for original, copy in list(self.copies.items()):
            if copy == self.tmp / f"{service}.conf":  # the healthcheck's: its real port
                text = re.sub(r"^listenPort=0$", f"listenPort={self.ports[port]}",
                              copy.read_text(), flags=re.M)  # fmt: skip
                self.copies[original] = self.tmp / f"{service}.health.conf"
                self.copies[original].write_text(text)
        return proc

    def start_binary(
        self, service: str, mounts: Mapping[str, Path], env: Mapping[str, str]
    ) -> BinaryProcess:
        """A command not ours as the host's binary; the ports it names that no service holds
        are its own, on free ports (the caller waits for its healthcheck)."""
        if service not in self.order:
            self.order.append(service)
        command = self.services[service]["command"]
        for _, port in ADDRESS.findall(" ".join(command)):
            self.ports.setdefault(int(port), free_listen_port())
        argv = host_binary([self.local(arg, mounts) for arg in command])
        assert argv is not None, f"{service}: the host has no {Path(command[0]).name}"
        proc = self.binaries[service] = BinaryProcess(argv, env, self.tmp / f"{service}.log")
        return proc

    def start_any(self, service: str) -> None:
        """``start``, or ``start_binary`` for a command not ours."""
        if python_argv(self.services[service]["command"]) is not None:
            self.start(service)
            return
        mounts = self.mounts(service)
        env = self.services[service].get("environment", {})
        self.start_binary(service, mounts, {k: self.local(str(v), mounts) for k, v in env.items()})

    def healthcheck(self, service: str) -> list[str] | None:
        """The healthcheck command as a local command line: this interpreter running ours, or
        the host's binary of a command not ours (None: neither exists yet); a conf file a
        service's command named is its copy."""
        test = self.services[service]["healthcheck"]["test"]
        assert test[0] == "CMD", test
        mounts = self.mounts(service)
        command = [self.local(arg, mounts) for arg in test[1:]]
        command = [str(self.copies.get(Path(arg), arg)) for arg in command]
        argv = python_argv(command)
        if argv is not None:
            return [sys.executable, *argv]
        if test[1] in entry_points() or test[1:3] == ["python3", "-m"]:
            return None  # ours, not there yet
        return host_binary(command)

    def check_health(self, service: str) -> subprocess.CompletedProcess[str]:
        """One run of ``service``'s healthcheck, with its environment, as Docker runs it in the
        service's container."""
        argv = self.healthcheck(service)
        assert argv is not None, f"{service}: its healthcheck is no command of ours"
        svc = self.services[service]
        timeout = float(svc["healthcheck"]["timeout"].rstrip("s"))
        mounts = self.mounts(service)
        env = {k: self.local(str(v), mounts) for k, v in svc.get("environment", {}).items()}
        return subprocess.run(
            argv,
            cwd=ROOT,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=timeout + 10,  # the check's own bound, and the interpreter's start
        )

    def wait_healthy(self, service: str) -> bool:
        """Run the healthcheck until it exits 0 (compose's ``service_healthy``); False when
        its console script does not exist yet (the caller checks readiness another way)."""
        if self.healthcheck(service) is None:
            return False
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while True:
            run = self.check_health(service)
            if run.returncode == 0:
                return True
            assert time.monotonic() < deadline, f"{service} unhealthy: {run.stdout}{run.stderr}"
            time.sleep(0.2)

    def stop(self) -> dict[str, int]:
        """Each process by its PID, dependents first (compose's order); the exit codes."""
        codes = {}
        for service in reversed(self.order):
            proc = self.procs.get(service) or self.binaries[service]
            codes[service] = proc.stop(10)
            print(f"== {service}\n{proc.dump()}")
        return codes
