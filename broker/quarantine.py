"""Quarantine: entries of a state file that a current rule refuses are set aside at start.

An older version (or a hand edit) may have stored what the edges now refuse: a %RETRY% topic
with 2**40 queues (N1), a group of 300 characters (N8), an offset Java's long cannot hold.
Loaded, such an entry would be registered, served or copied to slaves, and fail there for
everything else. Each one is left out of the live table, appended to ``<file>.quarantine``
next to the file (the entry as stored, its key, the rule it breaks, when: nothing is lost,
and an operator can restore it by hand), and warned about once at start. The rules are
remoting.protocol.bounds'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container
from pathlib import Path
from typing import Any

import structlog

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import atomic_write
from aiorocketmq.remoting.protocol.bounds import (
    STORED_QUEUE_NUMS_MAX,
    check_group_name,
    group_config_refusal,
    java_long_refusal,
    queue_id_refusal,
    topic_config_refusal,
)
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.topic import TopicConfig, check_topic_name

log = structlog.get_logger(__name__)

# (key, entry) -> why the entry may not be loaded, or None
Rule = Callable[[str, Any], str | None]
_MALFORMED = (ValueError, KeyError, TypeError, AttributeError)


def quarantine_path(path: Path) -> Path:
    return path.with_name(path.name + ".quarantine")


def set_aside(
    path: Path, table: dict[str, Any], rule: Rule, what: str
) -> tuple[dict[str, Any], int]:
    """The entries of ``table`` (read from ``path``) that ``rule`` accepts, and how many it
    refused; those are appended to ``path``'s quarantine file (written before this returns)
    and warned about."""
    good: dict[str, Any] = {}
    refused: list[dict[str, Any]] = []
    for key, entry in table.items():
        reason = rule(str(key), entry)
        if reason is None:
            good[key] = entry
            continue
        log.warning("state_entry_quarantined", path=str(path), what=what, key=ascii(key)[:300],
                    reason=reason[:512], kept_in=str(quarantine_path(path)))  # fmt: skip
        refused.append({"key": str(key), "entry": entry, "reason": reason})
    if refused:
        _append(quarantine_path(path), refused)
    return good, len(refused)


def _append(path: Path, refused: list[dict[str, Any]]) -> None:
    """Add ``refused`` to the quarantine file, each (key, entry) once however many starts
    find it again (the state file keeps it until its next write)."""
    kept: list[dict[str, Any]] = []
    try:
        kept = json.loads(path.read_text(encoding="utf-8")).get("quarantined") or []
    except FileNotFoundError:
        pass
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: cannot read the quarantine file: {exc}") from exc
    seen = {(e.get("key"), json.dumps(e.get("entry"), sort_keys=True)) for e in kept}
    at = now_ms()
    for item in refused:
        if (item["key"], json.dumps(item["entry"], sort_keys=True)) not in seen:
            kept.append({**item, "quarantinedAt": at})
    data = json.dumps({"quarantined": kept}, indent=2, ensure_ascii=True)
    try:
        atomic_write(path, data.encode())
    except OSError as exc:  # refusing to start beats losing the entry
        raise ConfigError(f"{path}: cannot write the quarantine file: {exc}") from exc


def topic_rule(builtin: Container[str]) -> Rule:
    """topics.json: a parsable TopicConfig under its own name, valid numbers; a valid name
    unless it is one of the broker's built-in topics (its cluster and broker names are
    whatever the configuration says)."""

    def rule(name: str, raw: Any) -> str | None:
        try:
            config = TopicConfig.from_json(raw)
        except _MALFORMED as exc:
            return f"malformed TopicConfig: {exc!r}"
        if config.topic_name != name:
            return f"topicName {config.topic_name!r} is not its key"
        bad = None if name in builtin else check_topic_name(name)
        return bad or topic_config_refusal(config, STORED_QUEUE_NUMS_MAX)

    return rule


def group_rule(name: str, raw: Any) -> str | None:
    """subscriptionGroup.json: a parsable SubscriptionGroupConfig under its own valid name."""
    try:
        config = SubscriptionGroupConfig.from_json(raw)
    except _MALFORMED as exc:
        return f"malformed SubscriptionGroupConfig: {exc!r}"
    if config.group_name != name:
        return f"groupName {config.group_name!r} is not its key"
    return group_config_refusal(config, retried=False, most=STORED_QUEUE_NUMS_MAX)


def offsets_rule(key: str, raw: Any) -> str | None:
    """consumerOffset.json: ``topic@group`` -> {queueId: offset}: a valid group, queue ids
    a topic can have, offsets Java's long holds (slaves and clients parse them)."""
    topic, at, group = key.rpartition("@")
    if not at or not topic:
        return "the key is not topic@group"
    bad = check_group_name(group)
    if bad is not None:
        return bad
    if not isinstance(raw, dict):
        return "the queues are not an object"
    for queue, offset in raw.items():
        try:
            qid, value = int(queue), int(offset)
        except _MALFORMED as exc:
            return f"malformed offset: {exc!r}"
        bad = queue_id_refusal("queueId", qid) or java_long_refusal("offset", value)
        if bad is not None:
            return bad
    return None


def usable(obj: Any, table_key: str, path: Path, rule: Rule, what: str) -> Any:
    """A state file's content with the entries of its ``table_key`` table that ``rule``
    refuses set aside. When there were any, the data version (if the file has one) moves on,
    so name servers and slaves take the smaller table, and the file is written again without
    them (after the quarantine file: nothing is lost), so the next start finds none."""
    table = obj.get(table_key) or {}
    if not isinstance(table, dict):
        return obj  # the loader's own parsing says what is wrong
    good, refused = set_aside(path, table, rule, what)
    if not refused:
        return obj
    obj = {**obj, table_key: good}
    version = obj.get("dataVersion")
    if isinstance(version, dict):
        counter = version.get("counter", 0)
        counter = counter + 1 if type(counter) is int else counter  # else the loader refuses
        obj["dataVersion"] = {**version, "counter": counter, "timestamp": now_ms()}
    try:
        atomic_write(path, dumps(obj))
    except (OSError, ValueError) as exc:  # kept as it was: the next start sets them aside again
        log.warning("state_file_not_rewritten", path=str(path), error=str(exc))
    return obj


def usable_topics(obj: Any, path: Path, builtin: Container[str]) -> Any:
    """topics.json (TopicConfigSerializeWrapper) without the topics a rule refuses."""
    return usable(obj, "topicConfigTable", path, topic_rule(builtin), "topic")


def usable_groups(obj: Any, path: Path) -> Any:
    """subscriptionGroup.json without the groups a rule refuses."""
    return usable(obj, "subscriptionGroupTable", path, group_rule, "subscription group")


def usable_offsets(obj: Any, path: Path) -> Any:
    """consumerOffset.json without the topic@group entries a rule refuses."""
    return usable(obj, "offsetTable", path, offsets_rule, "consumer offsets")
