"""The SDK's face (issue 30): every public class has a docstring and shows its real signature
at run time, compiled or not (``help()``, IDEs, ``inspect.signature``); the producers take
typed keywords that mypy checks; spark and mqadmin have the public names they need."""

from __future__ import annotations

import dataclasses
import inspect
import os
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from mypy import api as mypy_api

import aiorocketmq
from aiorocketmq import Message, Producer, ProducerOptions, TransactionProducer
from aiorocketmq.client import sync
from aiorocketmq.client.producer.options import ProducerSettings

ROOT = Path(__file__).resolve().parent.parent.parent
# what the SDK hands out and users read, never build: their fields are their face (compiled
# codec classes: their help lists the fields)
NOT_BUILT_BY_USERS = {"MessageExt", "Columns", "Layout"}


def public_classes() -> list[tuple[str, type]]:
    return [
        (name, obj)
        for name in aiorocketmq.__all__
        if isinstance(obj := getattr(aiorocketmq, name), type)
    ]


def own_doc(cls: type) -> str:
    """The class's own docstring, not what dataclasses or enum make up for one without."""
    doc = cls.__dict__.get("__doc__") or ""
    made_up = doc.startswith(f"{cls.__name__}(") or doc.strip() == "An enumeration."
    return "" if made_up else doc.strip()


def test_every_public_class_has_a_docstring() -> None:
    missing = [name for name, cls in public_classes() if not own_doc(cls)]
    assert not missing


def check_signature(where: str, fn: Callable[..., object], bad: list[str]) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        bad.append(f"{where}: no signature ({exc})")
        return
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.annotation is inspect.Parameter.empty or p.annotation in (type, "type"):
            bad.append(f"{where}({p.name}): annotation {p.annotation!r}")


def public_methods(cls: type) -> list[tuple[str, Callable[..., object]]]:
    out = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member) or isinstance(member, type):
            continue
        owner = getattr(member, "__objclass__", None)
        if owner is not None and owner.__module__ == "builtins":  # tuple.count and the like
            continue
        out.append((name, member))
    return out


def test_public_constructors_and_methods_show_their_signatures() -> None:
    """Compiled with mypyc, Producer.send read ``send()`` and Message ``tags: type = None``."""
    bad: list[str] = []
    for name, cls in public_classes():
        if name in NOT_BUILT_BY_USERS or issubclass(cls, BaseException):
            continue
        if typing.is_typeddict(cls):  # a dict of keywords: its fields are its signature
            continue
        if not (_is_enum(cls) or getattr(cls, "_is_protocol", False)):  # users implement those
            check_signature(name, cls, bad)
        for mname, method in public_methods(cls):
            if not _is_enum(cls):
                check_signature(f"{name}.{mname}", method, bad)
    assert not bad


def _is_enum(cls: type) -> bool:
    import enum

    return issubclass(cls, enum.Enum)


def test_the_faces_users_read_most_are_whole() -> None:
    send = inspect.signature(Producer.send)
    assert list(send.parameters) == ["self", "msg", "selector", "arg", "queue", "timeout_ms"]
    assert inspect.iscoroutinefunction(Producer.send)
    assert "Send and wait until stored" in (Producer.send.__doc__ or "")
    msg = inspect.signature(Message)
    assert str(msg.parameters["tags"].annotation) == "str | None"
    assert list(msg.parameters)[:3] == ["topic", "body", "tags"]


def test_the_producers_keywords_are_producer_options() -> None:
    """One list of settings, one set of defaults: ProducerOptions, Producer's keywords and
    ProducerSettings (what TransactionProducer and the blocking producers take)."""
    fields = {f.name: f.default for f in dataclasses.fields(ProducerOptions)}
    params = inspect.signature(Producer).parameters
    keywords = {n: p.default for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    assert keywords == fields
    assert set(ProducerSettings.__annotations__) == set(fields)
    p = Producer("pg_face", namesrv_addr="127.0.0.1:9876", send_msg_timeout=1234)
    assert p.options == ProducerOptions(send_msg_timeout=1234)
    for cls in (TransactionProducer, sync.Producer, sync.TransactionProducer):
        assert "options" in inspect.signature(cls).parameters
    with pytest.raises(TypeError):
        Producer("pg_face", namesrv_addr="127.0.0.1:9876", send_msg_timout=3000)  # type: ignore[call-arg]


def test_mypy_strict_rejects_a_misspelt_producer_option(tmp_path: Path) -> None:
    """mypy --strict accepted ``Producer(..., send_msg_timout=3000)`` under ``**options``."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from aiorocketmq import Producer, TransactionProducer, TransactionListener\n"
        "from aiorocketmq.client import sync\n"
        "def make(listener: TransactionListener) -> None:\n"
        "    Producer('g', namesrv_addr='h:9876', send_msg_timeout=3000)\n"
        "    Producer('g', namesrv_addr='h:9876', send_msg_timout=3000)\n"
        "    TransactionProducer('g', listener, retry_times_when_sent_failed=1)\n"
        "    sync.Producer('g', send_msg_timeout='3000')\n"
    )
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n[mypy-msgpack.*]\nignore_missing_imports = True\n")
    stage = ROOT / "build" / "stage"
    old = os.environ.get("MYPYPATH")
    if stage.is_dir():  # a source checkout (the editable install's hook is invisible to mypy)
        os.environ["MYPYPATH"] = str(stage)
    try:
        out, err, status = mypy_api.run(
            ["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), str(snippet)]
        )
    finally:
        if old is None:
            os.environ.pop("MYPYPATH", None)
        else:
            os.environ["MYPYPATH"] = old
    errors = [line for line in out.splitlines() if ": error:" in line and "snippet.py" in line]
    assert status == 1, out + err
    assert [line.split("snippet.py:")[1].split(":")[0] for line in errors] == ["5", "6", "7"], out
    assert '"send_msg_timout"' in errors[0] and '"retry_times_when_sent_failed"' in errors[1]
