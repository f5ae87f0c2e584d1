"""Builds aiorocketmq; compiles the hot modules (codec, store, SDK send path) with mypyc
when it can.

Every setting but the compiled modules is in pyproject.toml. Without a C compiler, or when
mypyc fails, the same modules run as pure Python: the build prints one warning line and
succeeds. ``AIOROCKETMQ_PURE=1`` skips compiling. README "Compiled modules".

What a compiled module must keep to (mypyc): full annotations; no subclass of a builtin but
exceptions (``@mypyc_attr(native_class=False)`` for OSError's); one base class plus
``@trait``s; a class subclassed outside the list needs
``@mypyc_attr(allow_interpreted_subclasses=True)``; no exec or eval; one type per name in a
function, except clauses included (mypyc/mypyc#620). Its callers inside the list call its
functions and methods directly: a test that patches one sees no effect (patch ``os`` or go
through an uncompiled module). tests/test_compiled.py runs both builds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The modules compiled with mypyc, into one shared library (GROUP). Hot: per message on the
# broker's send and pull paths and the SDK's send path. Not listed, on purpose:
# - remoting/protocol/headers/: generates its code at run time.
# - the protocol's cold modules (codes, route, heartbeat, register, group, steps, faq).
# - broker/store/config.py: mypyc drops the ClassVar of a slots dataclass (BOUNDS).
# - broker/store/recovery.py: runs once at start.
# - the other cold store modules (checkpoint, disk, highwater, retention, results).
# - remoting/channel.py, dispatch.py: compiled they cut ~2 % more of a broker send and ~4 % of
#   an SDK send (callgrind); left out while the send path is being reworked.
# - the SDK's public classes (client/producer/producer.py, client/core/message.py): compiled,
#   they lose their signatures and help (issue 30); Producer is an interpreted subclass of the
#   compiled ProducerCore (client/producer/sending.py), which holds the send path.
# reads.py and replica.py are MessageStore's mixins: compiled with it (as mypyc traits).
# One quoted path per line: the Makefile reads them.
COMPILED = [
    "remoting/protocol/columns.py",
    "remoting/protocol/command.py",
    "remoting/protocol/fastjson.py",
    "remoting/protocol/frame.py",
    "remoting/protocol/batch.py",
    "remoting/protocol/message.py",
    "remoting/protocol/msgid.py",
    "remoting/protocol/serialize.py",
    "remoting/protocol/text.py",
    "remoting/protocol/topic.py",
    "broker/store/store.py",
    "broker/store/commitlog.py",
    "broker/store/consumequeue.py",
    "broker/store/dispatch.py",
    "broker/store/flush.py",
    "broker/store/index.py",
    "broker/store/many.py",
    "broker/store/queues.py",
    "broker/store/reader.py",
    "broker/store/reads.py",
    "broker/store/replay.py",
    "broker/store/replica.py",
    "broker/store/segment.py",
    "remoting/client.py",
    "remoting/deadlines.py",
    "remoting/slots.py",
    "client/core/api.py",
    "client/core/fault.py",
    "client/producer/sending.py",
    "client/core/publish.py",
    "client/core/validate.py",
]
# the shared library, aiorocketmq/compiled__mypyc.<abi>.so: inside the one import root
GROUP = "aiorocketmq.compiled"
RELAXED = [
    "--ignore-missing-imports",
    "--no-warn-unused-ignores",
    "--no-warn-return-any",
    "--allow-subclassing-any",
    "--allow-untyped-decorators",
]
PACKAGES = ("remoting", "namesrv", "broker", "client", "spark", "deploy")
ROOT = Path(__file__).resolve().parent
# mypyc names a module after its path: it compiles the folders through a link farm
# build/stage/aiorocketmq/<folder> -> <folder> (also mypy's view, pyproject's [tool.mypy]), so
# broker/store/commitlog.py becomes the extension aiorocketmq.broker.store.commitlog
STAGE = Path("build", "stage")


def stage() -> Path:
    """Makes (or repairs) the link farm; returns the staged root package's directory."""
    root = ROOT / STAGE / "aiorocketmq"
    root.mkdir(parents=True, exist_ok=True)
    for name in (*PACKAGES, "__init__.py", "scripts.py", "py.typed"):
        link = root / name
        target = Path("..", "..", "..", name if name in PACKAGES else f"aiorocketmq/{name}")
        if link.is_symlink() and Path(link.readlink()) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return root


def warn(reason: str) -> None:
    print(
        f"aiorocketmq: WARNING: {reason}: the hot modules run as pure Python (slower; "
        "README 'Compiled modules')",
        file=sys.stderr,
        flush=True,
    )


def mypyc_extensions() -> list[Extension]:
    """The extensions mypyc generates C for, or [] (with the warning) when it cannot."""
    if os.environ.get("AIOROCKETMQ_PURE", "") not in ("", "0"):
        warn("AIOROCKETMQ_PURE is set")
        return []
    try:
        from mypyc.build import mypycify

        # mypy reads pyproject's [tool.mypy]. The build environment lacks the runtime
        # dependencies (structlog, msgpack): typed as Any, they compile to the same generic
        # calls; the strict checks Any would trip are `make lint`'s job, with every type known
        staged = ROOT / STAGE / "aiorocketmq"
        os.environ["MYPYPATH"] = str(STAGE)
        exts: list[Extension] = mypycify(
            [*RELAXED, "--explicit-package-bases", *(str(staged / m) for m in COMPILED)],
            group_name=GROUP,
            target_dir=str(Path("build", "mypyc")),
        )
    except (Exception, SystemExit) as exc:  # mypy's errors end in SystemExit  # noqa: BLE001
        warn(f"mypyc failed ({type(exc).__name__}: {exc})")
        return []
    return exts


def stale_builds(keep: set[Path]) -> list[Path]:
    """Extension modules in the source tree (an earlier in-place build) not in ``keep``: left
    there, Python would import them instead of the .py next to them."""
    found = [
        *ROOT.glob("*.so"),
        *(so for pkg in (*PACKAGES, "aiorocketmq") for so in (ROOT / pkg).rglob("*.so")),
    ]
    return [so for so in found if so.resolve() not in keep]


class OptionalBuildExt(build_ext):
    """Compiles with mypyc when it can; falls back to the pure-Python modules when it cannot."""

    def finalize_options(self) -> None:
        self.distribution.ext_modules = mypyc_extensions()
        super().finalize_options()

    def run(self) -> None:
        if self.extensions:
            try:
                super().run()
            except Exception as exc:  # noqa: BLE001 -- no compiler (CompileError, OSError), ...
                warn(f"compiling failed ({type(exc).__name__}: {exc})")
                self.extensions = []
        if self.inplace or self.editable_mode:
            build_py = self.get_finalized_command("build_py")
            keep = {
                Path(self._get_inplace_equivalent(build_py, ext)[0]).resolve()
                for ext in self.extensions
            }
            for so in stale_builds(keep):
                so.unlink()

    def get_outputs(self) -> list[str]:
        return super().get_outputs() if self.extensions else []


stage()  # for mypyc below and for mypy in `make lint`, compiled or not
# a placeholder until OptionalBuildExt knows what mypyc generates: it makes setuptools run
# build_ext (and tag the wheel for this platform)
setup(
    ext_modules=[Extension(f"{GROUP}__mypyc", sources=[])],
    cmdclass={"build_ext": OptionalBuildExt},
)
