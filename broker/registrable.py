"""LeftOut: the topics a broker does not register, because no name server would route them.

A topic the name server cannot route (``aiorocketmq.remoting.protocol.register.unregistrable``:
queue numbers Java's int cannot hold, a blank or over-long name, text that is not UTF-8) got into
the topic table somehow -- an old topics.json, a future bug. Sent along, it used to make the
name server refuse the whole registration, so every topic of the broker lost its route 15 s
later, and again after every restart (issue 29, N1). The broker leaves it out instead: the
other topics register, the topic itself is served locally as before, and a warning names it
once (not at every registration, every 30 s), counted (``count``, on /metrics).

Ours: 4.9.8's BrokerController.registerBrokerAll sends every topic it holds.
"""

from __future__ import annotations

import dataclasses
from typing import Final

import structlog

from aiorocketmq.remoting.protocol.register import TopicConfigWrapper, unregistrable

log = structlog.get_logger(__name__)

NAME_SHOWN: Final = 200  # characters of a topic name a warning shows
WARNED_MAX: Final = 10_000  # names remembered as warned about; past it, forgotten at once


class LeftOut:
    def __init__(self) -> None:
        self.count = 0  # topics warned about: each (name, reason) once
        self.warned: dict[str, str] = {}  # name -> the reason it was warned about

    def registrable(self, wrapper: TopicConfigWrapper) -> TopicConfigWrapper:
        """``wrapper`` without the topics a name server would skip (the same object when
        there are none); each newly left out one is warned about."""
        table = wrapper.topic_config_table
        bad: dict[str, str] = {}
        for name, config in table.items():
            reason = unregistrable(config)
            if reason is not None:
                bad[name] = reason
        if not bad:
            return wrapper
        for name, reason in bad.items():
            if self.warned.get(name) != reason:
                self._warn(name, reason)
        kept = {name: config for name, config in table.items() if name not in bad}
        return dataclasses.replace(wrapper, topic_config_table=kept)

    def _warn(self, name: str, reason: str) -> None:
        if len(self.warned) >= WARNED_MAX:
            self.warned.clear()
        self.warned[name] = reason
        self.count += 1
        log.warning("topic_not_registered", topic=name[:NAME_SHOWN], reason=reason,
                    hint="no name server would route it; delete or update the topic")  # fmt: skip
