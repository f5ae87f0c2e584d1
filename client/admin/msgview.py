"""How mqadmin shows a message (QueryMsgByIdSubCommand.printMsg's fields): a body is text
when it is UTF-8 made of printable characters (and whitespace); otherwise a table says
"<binary, N bytes>" and ``--json`` carries it in base64, ``bodyEncoding`` saying "text" or
"base64". Apache writes the body to a file under /tmp instead. No I/O here."""

from __future__ import annotations

import base64
from typing import Any

from aiorocketmq.client.admin.api_group import format_time
from aiorocketmq.remoting.protocol.message import MessageExt, Prop


def body_text(body: bytes) -> str | None:
    """The body as text when it is UTF-8 made of printable characters (and whitespace)."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return None
    printable = all(ch.isprintable() or ch in "\t\r\n" for ch in text)
    return text if printable else None


def client_msg_id(msg: MessageExt) -> str:
    """MessageClientExt.getMsgId: the UNIQ_KEY, else the offsetMsgId."""
    return msg.properties.get(Prop.UNIQ_KEY) or msg.msg_id


def message_record(msg: MessageExt) -> dict[str, Any]:
    """A message as plain JSON: ``body`` is text when UTF-8 printable, else base64 (and
    ``bodyEncoding`` says which)."""
    text = body_text(msg.body)
    return {
        "msgId": client_msg_id(msg),
        "offsetMsgId": msg.msg_id,
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.properties.get(Prop.KEYS),
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "properties": dict(msg.properties),
        "bodyEncoding": "text" if text is not None else "base64",
        "body": text if text is not None else base64.b64encode(msg.body).decode(),
        "bodySize": len(msg.body),
    }


def body_cell(msg: MessageExt) -> str:
    text = body_text(msg.body)
    return text if text is not None else f"<binary, {len(msg.body)} bytes>"


def message_pairs(msg: MessageExt) -> list[tuple[str, Any]]:
    """QueryMsgByIdSubCommand.printMsg's lines, the body shown instead of written to a file."""
    return [
        ("OffsetID:", msg.msg_id),
        ("Topic:", msg.topic),
        ("Tags:", f"[{_java(msg.tags)}]"),
        ("Keys:", f"[{_java(msg.properties.get(Prop.KEYS))}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commit_log_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", format_time(msg.born_timestamp, millis=True)),
        ("Store Timestamp:", format_time(msg.store_timestamp, millis=True)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", msg.sys_flag),
        ("Properties:", _java_map(msg.properties)),
        ("Message Body:", body_cell(msg)),
    ]


def _java_map(props: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"


def _java(value: str | None) -> str:
    return "null" if value is None else value  # String.valueOf(null)
