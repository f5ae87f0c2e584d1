"""The consumers' typed surface (issue 30): keyword options mypy checks, listeners whose
status type mypy checks, the option types agreeing with the settings they fill, and no
import circle in the SDK."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
import uuid
from pathlib import Path

import mypy.api

from aiorocketmq.client.consumer.lite.options import LitePullOptions, PullOptions
from aiorocketmq.client.consumer.types import ConsumerOptions, PushOptions

ROOT = Path(__file__).resolve().parents[2]

# each line that mypy --strict must refuse ends with "# E: <what its message says>"
SNIPPET = """
from aiorocketmq.client.consumer.lite.consumer import PullConsumer
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext, ConsumeFromWhere, ConsumeOrderlyContext,
    ConsumeOrderlyStatus, ConsumeStatus, MessageModel,
)
from aiorocketmq.client.sync import PushConsumer as SyncPushConsumer
from aiorocketmq.remoting.protocol.message import MessageExt


async def ok(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def plain_ok(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
    return ConsumeStatus.RECONSUME_LATER


async def in_order(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
    return ConsumeOrderlyStatus.SUCCESS


async def says_bool(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> bool:
    return True


def plain_bool(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> bool:
    return True


push = PushConsumer("g", "127.0.0.1:9876", message_model=MessageModel.BROADCASTING,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    consume_concurrency=4, pull_batch_size=8)
push.register_message_listener(ok)
push.register_message_listener(plain_ok)
push.register_message_listener(in_order, orderly=True)
PushConsumer("g", "127.0.0.1:9876", consume_concurency=4)  # E: Unexpected keyword argument
PushConsumer("g", "127.0.0.1:9876", pull_batch_size="8")  # E: incompatible type
PushConsumer("g", "127.0.0.1:9876", "CLUSTERING")  # E: Too many positional arguments
push.register_message_listener(says_bool)  # E: register_message_listener
push.register_message_listener(plain_bool)  # E: register_message_listener
push.register_message_listener(in_order)  # E: register_message_listener
push.register_message_listener(ok, orderly=True)  # E: register_message_listener
SyncPushConsumer("g", "127.0.0.1:9876", consume_concurency=4)  # E: Unexpected keyword argument
sync = SyncPushConsumer("g", "127.0.0.1:9876")
sync.register_message_listener(plain_bool)  # E: register_message_listener
pull = PullConsumer("g", "127.0.0.1:9876", auto_commit=False, poll_timeout_millis=100)
PullConsumer("g", "127.0.0.1:9876", auto_comit=False)  # E: Unexpected keyword argument
"""


def test_mypy_refuses_misspelled_options_and_listeners_of_the_wrong_status(
    tmp_path: Path,
) -> None:
    """mypy --strict on an application: each marked line refused, the rest accepted."""
    # a module name of its own: mypy's shared cache keys a module by name, and when the text
    # is unchanged it replays the errors it cached for the last run's file (its path, not ours)
    path = tmp_path / f"app_{uuid.uuid4().hex}.py"
    path.write_text(SNIPPET)
    stdout, stderr, _ = mypy.api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--strict",
        "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", str(path),
    ])  # fmt: skip
    assert not stderr, stderr
    errors: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        m = re.match(rf"{re.escape(str(path))}:(\d+): error: (.*)", line)
        if m:
            errors.setdefault(int(m[1]), []).append(m[2])
    expected = {
        n: text.split("# E: ")[1]
        for n, text in enumerate(SNIPPET.splitlines(), start=1)
        if "# E: " in text
    }
    assert sorted(errors) == sorted(expected), stdout
    for n, what in expected.items():
        assert any(what in e for e in errors[n]), (n, what, errors[n])


def test_the_keyword_options_are_the_settings_fields() -> None:
    """PushOptions / PullOptions (what mypy checks a call against) name exactly the fields
    of ConsumerOptions / LitePullOptions (where the defaults are), with the same types."""
    for keywords, settings in ((PushOptions, ConsumerOptions), (PullOptions, LitePullOptions)):
        fields = {f.name for f in dataclasses.fields(settings)}
        assert set(keywords.__annotations__) == fields
        assert typing.get_type_hints(keywords) == typing.get_type_hints(settings)


def _imports(path: Path) -> set[str]:
    """Every aiorocketmq module ``path`` imports, TYPE_CHECKING blocks and functions too
    (the project has no relative imports: ruff's TID bans them)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("aiorocketmq.")}


def test_no_import_circle_in_the_sdk() -> None:
    """No two modules of client/ reach each other through imports, even imports made for
    types only (issue 30: push/consumer <-> push/requests, lite/consumer <-> lite/requests)."""
    modules: dict[str, Path] = {}
    for path in (ROOT / "client").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules["aiorocketmq." + ".".join(parts)] = path
    graph = {
        name: {m for m in _imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    circles = []
    for start in graph:
        seen, stack = set(), [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(trail)
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert circles == []
