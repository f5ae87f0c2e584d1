"""Builds aiorocketmq; compiles the hot modules (codec, store, SDK send path) with mypyc
when it can.

Every setting but the compiled modules is in pyproject.toml. Without a C compiler, or when
mypyc fails, the same modules run as pure Python: the build prints one warning line and
succeeds. ``AIOROCKETMQ_PURE=1`` (or ``MYPYC=0``) skips compiling. README "Compiled modules".

The build says what it does (``aiorocketmq:`` lines, which `make setup` shows; pip shows them
with -v): mypyc writes one C file per module (multi_file), gcc compiles them on every core,
and a rebuild compiles only the C files that changed (their objects stay in build/obj.*).

What a compiled module must keep to (mypyc): full annotations; no subclass of a builtin but
exceptions (``@mypyc_attr(native_class=False)`` for OSError's); one base class plus
``@trait``s; a class subclassed outside the list needs
``@mypyc_attr(allow_interpreted_subclasses=True)``; no exec or eval; one type per name in a
function, except clauses included (mypyc/mypyc#620). Its callers inside the list call its
functions and methods directly: a test that patches one sees no effect (patch ``os`` or go
through an uncompiled module). tests/test_compiled.py runs both builds.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from threading import Lock
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The modules compiled with mypyc, into one shared library (GROUP). Hot: per message on the
# broker's send and pull paths and the SDK's send path. Not listed, on purpose:
# - remoting/protocol/headers/: generates its code at run time.
# - the protocol's cold modules (codes, route, heartbeat, register, group, steps, faq), and
#   sql92's errors.py (its SelectorError stays a plain exception) and limits.py.
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
    "remoting/protocol/bigendian.py",
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
    "broker/store/props.py",
    "broker/filter/memo.py",
    "broker/timer_convert.py",
    "remoting/client.py",
    "remoting/deadlines.py",
    "remoting/slots.py",
    "client/core/api.py",
    "client/core/fault.py",
    "client/producer/sending.py",
    "client/core/publish.py",
    "client/core/validate.py",
    "remoting/protocol/signature.py",
    "remoting/acl/guard.py",
    "remoting/acl/passed.py",
    "remoting/acl/validator.py",
    "remoting/acl/resources.py",
    "remoting/protocol/sql92/javatypes.py",
    "remoting/protocol/sql92/lexer.py",
    "remoting/protocol/sql92/nodes.py",
    "remoting/protocol/sql92/scanner.py",
    "remoting/protocol/sql92/parser.py",
    "remoting/protocol/sql92/evaluator.py",
    "remoting/protocol/sql92/selector.py",
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
# mypyc's C, rewritten only where it changed (mypyc keeps an unchanged file's mtime)
TARGET = Path("build", "mypyc")
# the objects compiled from it, kept between builds (an editable install's build_temp is a
# temporary directory: every rebuild would compile everything); one per interpreter
OBJECTS = Path("build", f"obj.{sys.implementation.cache_tag}")
# what gcc -O3 gets through per CPU second here (mypyc's C, 2 cores shared with other work):
# the estimate in the "compiling" line
C_BYTES_PER_CPU_SECOND = 150_000
# the commands that only write metadata (pip runs them before building): no C needed
METADATA_ONLY = {"egg_info", "dist_info", "sdist"}


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


def say(line: str) -> None:
    """One line of the build's progress (`make setup` shows these, pip -v too)."""
    sys.stdout.write(f"aiorocketmq: {line}\n")  # one write: compilers run on threads
    sys.stdout.flush()


def took(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the compilers); 0 off Unix."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.cache  # an editable build finalizes build_ext twice
def mypyc_extensions() -> tuple[Extension, ...]:
    """The extensions mypyc generates C for, or () (with the warning) when it cannot."""
    if os.environ.get("AIOROCKETMQ_PURE", "") not in ("", "0"):
        warn("AIOROCKETMQ_PURE is set")
        return ()
    if os.environ.get("MYPYC", "") == "0":
        warn("MYPYC=0 is set")
        return ()
    say(f"mypyc: type-checking the {len(COMPILED)} hot modules and writing their C")
    start = time.monotonic()
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
            target_dir=str(TARGET),
            # one C file per module, not one of 15 MB: compiled in parallel, and a rebuild
            # compiles only the files that changed
            multi_file=True,
        )
    except (Exception, SystemExit) as exc:  # mypy's errors end in SystemExit  # noqa: BLE001
        warn(f"mypyc failed ({type(exc).__name__}: {exc})")
        return ()
    # multi_file puts the group's headers under its package (build/mypyc/aiorocketmq/), the
    # modules' C files include them from build/mypyc
    for ext in exts:
        ext.include_dirs.append(str(TARGET.joinpath(*GROUP.split(".")[:-1])))
    say(f"mypyc: wrote the C in {took(time.monotonic() - start)}")
    return tuple(exts)


def stale_builds(keep: set[Path]) -> list[Path]:
    """Extension modules in the source tree (an earlier in-place build) not in ``keep``: left
    there, Python would import them instead of the .py next to them."""
    found = [
        *ROOT.glob("*.so"),
        *(so for pkg in (*PACKAGES, "aiorocketmq") for so in (ROOT / pkg).rglob("*.so")),
    ]
    return [so for so in found if so.resolve() not in keep]


def newest(paths: Iterator[Path]) -> float:
    return max((p.stat().st_mtime for p in paths), default=0.0)


class Compiler:
    """A distutils compiler's ``compile``, one source at a time on a pool of ``jobs`` threads
    (one pool: however many extensions ask, at most ``jobs`` compilers run). It skips a source
    whose object is newer than it and than every header mypyc wrote, and says each file it
    finished."""

    def __init__(self, compiler: Any, jobs: int) -> None:
        self.compile = compiler.compile
        self.objects = compiler.object_filenames
        self.pool = ThreadPoolExecutor(max_workers=jobs)
        self.todo, self.done, self.lock = 0, 0, Lock()
        self.start = time.monotonic()
        self.headers = newest(TARGET.rglob("*.h"))

    def stale(self, sources: Sequence[str], output_dir: str | None) -> list[str]:
        objects = self.objects(sources, strip_dir=False, output_dir=output_dir)
        return [
            src
            for src, obj in zip(sources, objects, strict=True)
            if not Path(obj).exists()
            or Path(obj).stat().st_mtime < max(Path(src).stat().st_mtime, self.headers)
        ]

    def __call__(
        self, sources: Sequence[str], output_dir: str | None = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        def one(src: str) -> str:
            (obj,) = self.compile([src], output_dir, *args, **kwargs)
            # mypyc dates what it writes a second ahead: an object done within that second
            # would look stale to the next build
            made = max(time.time(), Path(src).stat().st_mtime, self.headers)
            os.utime(obj, (made, made))
            return src

        stale = self.stale(sources, output_dir)
        for future in as_completed([self.pool.submit(one, src) for src in stale]):
            src = future.result()
            with self.lock:
                self.done += 1
                count = f"[{self.done:>{len(str(self.todo))}}/{self.todo}]"
                say(f"{count} {took(time.monotonic() - self.start):>8}  {src}")
        return self.objects(sources, strip_dir=False, output_dir=output_dir)


class OptionalBuildExt(build_ext):
    """Compiles with mypyc when it can; falls back to the pure-Python modules when it cannot."""

    def finalize_options(self) -> None:
        # pip asks for the metadata (twice) before it builds: mypyc runs for the build alone
        if not set(self.distribution.commands) <= METADATA_ONLY:
            self.distribution.ext_modules = list(mypyc_extensions())
        super().finalize_options()
        self.build_temp = str(ROOT / OBJECTS)
        self.parallel = self.parallel or cores()  # the 31 small extensions too

    def run(self) -> None:
        if self.extensions:
            start, cpu = time.monotonic(), children_cpu()
            try:
                super().run()
            except Exception as exc:  # noqa: BLE001 -- no compiler (CompileError, OSError), ...
                warn(f"compiling failed ({type(exc).__name__}: {exc})")
                # the shims compiled beside the shared library would load without it
                for ext in self.extensions:
                    Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
                self.extensions = []
            else:
                spent = f"{children_cpu() - cpu:.0f} s of CPU"
                say(f"compiled and linked in {took(time.monotonic() - start)} ({spent})")
        if self.inplace or self.editable_mode:
            build_py = self.get_finalized_command("build_py")
            keep = {
                Path(self._get_inplace_equivalent(build_py, ext)[0]).resolve()
                for ext in self.extensions
            }
            for so in stale_builds(keep):
                so.unlink()

    def build_extensions(self) -> None:
        """Every stale C file of every extension, on one pool of ``parallel`` compilers."""
        jobs = cores() if self.parallel is True else int(self.parallel)
        # objects another mypy, compiler or set of flags compiled are compiled again
        # (written first: an interrupted build's objects are reused too)
        stamp, flags = ROOT / OBJECTS / "flags", self.flags()
        if not stamp.exists() or stamp.read_text() != flags:
            shutil.rmtree(ROOT / OBJECTS, ignore_errors=True)
            stamp.parent.mkdir(parents=True)
            stamp.write_text(flags)
        compile = Compiler(self.compiler, jobs)
        todo = [
            s for e in self.extensions for s in compile.stale(sorted(e.sources), self.build_temp)
        ]
        compile.todo = len(todo)
        say(self.plan(todo, jobs))
        self.compiler.compile = compile
        try:
            super().build_extensions()
        finally:
            compile.pool.shutdown(cancel_futures=True)

    def plan(self, todo: list[str], jobs: int) -> str:
        """What the compile will do, and about how long it takes."""
        total = sum(len(e.sources) for e in self.extensions)
        if not todo:
            return f"the {total} C files are unchanged since the last build: linking them"
        size = sum(Path(s).stat().st_size for s in todo)
        about = took(size / C_BYTES_PER_CPU_SECOND / min(jobs, len(todo)))
        files = f"{len(todo)} of {total} C files" if len(todo) < total else f"{total} C files"
        rest = "; the others are unchanged since the last build" if len(todo) < total else ""
        return (
            f"compiling {files} ({size / 1e6:.1f} MB) on {jobs} cores, about {about} if idle{rest}"
        )

    def flags(self) -> str:
        """What an object depends on besides its C file and mypyc's headers (mypy's version
        stands for its runtime's headers, which the build environment holds)."""
        import mypy.version

        return "\n".join(
            [
                f"mypy {mypy.version.__version__}",
                sys.version,
                " ".join(getattr(self.compiler, "compiler_so", [])),
                *(f"{e.name} {e.extra_compile_args} {e.define_macros}" for e in self.extensions),
            ]
        )

    def get_outputs(self) -> list[str]:
        return super().get_outputs() if self.extensions else []


if __name__ == "__main__":  # as setuptools runs it (tests/test_build.py imports it)
    stage()  # for mypyc below and for mypy in `make lint`, compiled or not
    # a placeholder until OptionalBuildExt knows what mypyc generates: it makes setuptools run
    # build_ext (and tag the wheel for this platform)
    setup(
        ext_modules=[Extension(f"{GROUP}__mypyc", sources=[])],
        cmdclass={"build_ext": OptionalBuildExt},
    )
