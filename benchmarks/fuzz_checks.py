"""Lasting-outage judges: does the cluster still do its everyday work after the fuzzing?

A normal client (our RemotingClient, client.api's requests) checks, on names the fuzzer
never uses:

- route: CHECK_TOPIC still has its route at the name server after the name server's broker
  expiry has passed (so a broker whose registrations are refused has been evicted by then);
- retry: a send-back of a normal group at each delay level arrives in its %RETRY% topic (one
  group per level, so a level that is stuck shows as that level);
- delay: a message with DELAY=level arrives in its topic at each level;
- acked: every message the bystander had acknowledged is still there (after restarts).

The run configures short delay levels (``DELAY_LEVELS``) so every level is checked in seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.route import dumps

CHECK_TOPIC: Final = "JudgeTopic"  # queue 0: the bystander's; queue 1: retries' originals
DELAY_TOPIC: Final = "JudgeDelay"  # queue L-1: the delay check of level L
DELAY_LEVELS: Final = "1s 1s 2s 2s 3s 3s 4s 4s 5s 5s 6s 6s 7s 7s 8s 8s 9s 9s"
LEVELS: Final = 18
SLOWEST: Final = 9.0  # seconds, the longest level above


def check_group(level: int) -> str:
    return f"judge_g{level}"


@dataclass
class Verdict:
    route: bool | None = None
    retry_stuck: list[int] = field(default_factory=list)  # levels whose retry never came
    delay_stuck: list[int] = field(default_factory=list)
    acked_lost: int | None = None  # acknowledged bystander messages missing
    notes: list[str] = field(default_factory=list)
    schedule: str = ""  # where the schedule service stands, when delays are stuck

    @property
    def ok(self) -> bool:
        return (
            self.route is not False
            and not self.retry_stuck
            and not self.delay_stuck
            and not self.acked_lost
            and not self.notes
        )

    def text(self) -> str:
        if self.ok:
            return "ok"
        parts = []
        if self.route is False:
            parts.append(f"route of {CHECK_TOPIC} lost")
        if self.retry_stuck:
            parts.append(f"retries stuck at levels {self.retry_stuck}")
        if self.delay_stuck:
            parts.append(f"delayed messages stuck at levels {self.delay_stuck} ({self.schedule})")
        if self.acked_lost:
            parts.append(f"{self.acked_lost} acknowledged messages missing")
        return "; ".join(parts + self.notes)


class Judge:
    def __init__(self, broker_addr: str, namesrv_addr: str, expiry_s: float) -> None:
        self.broker = broker_addr
        self.namesrv = namesrv_addr
        self.expiry_s = expiry_s
        self.client = RemotingClient()

    async def close(self) -> None:
        await self.client.close()

    async def call(self, addr: str, req: RemotingCommand, timeout: float = 10) -> RemotingCommand:
        return await self.client.invoke(addr, req, timeout)

    async def setup(self) -> None:
        """The judges' topics and groups (valid, made before any fuzzing)."""
        for topic, queues in ((CHECK_TOPIC, 4), (DELAY_TOPIC, LEVELS)):
            resp = await self.call(self.broker, api.create_topic(topic, queues))
            assert resp.code == R.SUCCESS, resp.remark
        for level in range(1, LEVELS + 1):
            body = dumps(SubscriptionGroupConfig(group_name=check_group(level)).to_json())
            req = RemotingCommand.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
            resp = await self.call(self.broker, req)
            assert resp.code == R.SUCCESS, resp.remark

    async def route_ok(self) -> bool:
        try:
            resp = await self.call(self.namesrv, api.get_route(CHECK_TOPIC), 5)
        except RemotingError:
            return False
        return resp.code == R.SUCCESS and b"brokerDatas" in resp.body

    async def lasting_route(self) -> bool:
        """The route, once the name server's expiry has passed and again a second later."""
        await asyncio.sleep(self.expiry_s + 2)
        first = await self.route_ok()
        await asyncio.sleep(1)
        return first and await self.route_ok()

    async def max_offset(self, topic: str, queue: int) -> int:
        resp = await self.call(self.broker, api.queue_request(C.GET_MAX_OFFSET, topic, queue))
        return int(resp.ext_fields.get("offset", "-1")) if resp.code == R.SUCCESS else -1

    async def send(self, topic: str, queue: int, props: dict[str, str] | None = None) -> int:
        """The commitlog offset of a message stored on ``topic``/``queue``."""
        req = api.send_message(topic, b"judge", group="judge_pg", queue_id=queue,
                               properties=props or {})  # fmt: skip
        resp = await self.call(self.broker, req)
        if resp.code != R.SUCCESS:
            raise RuntimeError(f"judge send to {topic}: {resp.code} {resp.remark}")
        return parse_offset_msg_id(resp.ext_fields["msgId"].split(",")[0])[1]

    async def flows(self) -> tuple[list[int], list[int]]:
        """(levels whose retry never arrived, levels whose delayed message never arrived)."""
        retry_before = {lv: await self.max_offset(f"%RETRY%{check_group(lv)}", 0)
                        for lv in range(1, LEVELS + 1)}  # fmt: skip
        delay_before = {
            lv: await self.max_offset(DELAY_TOPIC, lv - 1) for lv in range(1, LEVELS + 1)
        }
        for level in range(1, LEVELS + 1):
            offset = await self.send(CHECK_TOPIC, 1)
            req = api.send_back(offset, check_group(level), level, origin_msg_id="",
                                origin_topic=CHECK_TOPIC, max_reconsume_times=16)  # fmt: skip
            resp = await self.call(self.broker, req)
            if resp.code != R.SUCCESS:
                raise RuntimeError(f"judge send-back at level {level}: {resp.code} {resp.remark}")
            await self.send(DELAY_TOPIC, level - 1, {"DELAY": str(level)})
        deadline = time.monotonic() + SLOWEST + 20
        retry_stuck, delay_stuck = list(range(1, LEVELS + 1)), list(range(1, LEVELS + 1))
        while (retry_stuck or delay_stuck) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            retry_stuck = [lv for lv in retry_stuck
                           if await self.max_offset(f"%RETRY%{check_group(lv)}", 0)
                           <= max(retry_before[lv], 0)]  # fmt: skip
            delay_stuck = [lv for lv in delay_stuck
                           if await self.max_offset(DELAY_TOPIC, lv - 1)
                           <= delay_before[lv]]  # fmt: skip
        return retry_stuck, delay_stuck

    async def verdict(self, acked: int | None = None) -> Verdict:
        """Every judge; ``acked``: messages the bystander stored on CHECK_TOPIC queue 0."""
        v = Verdict()
        flows = asyncio.ensure_future(self.flows())  # while the route judge waits
        try:
            v.route = await self.lasting_route()
        except (RemotingError, OSError) as exc:
            v.notes.append(f"route judge failed: {exc}")
        try:
            if acked is not None:
                v.acked_lost = max(0, acked - await self.max_offset(CHECK_TOPIC, 0))
        except (RemotingError, OSError) as exc:
            v.notes.append(f"acked judge failed: {exc}")
        try:
            v.retry_stuck, v.delay_stuck = await flows
        except (RemotingError, RuntimeError, OSError) as exc:
            v.notes.append(f"retry/delay judge failed: {str(exc)[:160]}")
        if v.delay_stuck:
            v.schedule = await self.schedule_state(v.delay_stuck)
        return v

    async def schedule_state(self, levels: list[int]) -> str:
        """For stuck levels: how far SCHEDULE_TOPIC_XXXX's queue of the level goes and where
        the schedule service is in it (GET_ALL_DELAY_OFFSET): behind means it stopped moving,
        at the end means the delayed message never reached the queue."""
        try:
            req = RemotingCommand.request(C.GET_ALL_DELAY_OFFSET)
            table = json.loads((await self.call(self.broker, req)).body or b"{}")
            at = {int(k): v for k, v in (table.get("offsetTable") or {}).items()}
            parts = []
            for level in levels:
                end = await self.max_offset("SCHEDULE_TOPIC_XXXX", level - 1)
                parts.append(f"L{level} {at.get(level, '-')}/{end}")
        except (RemotingError, OSError, ValueError, AttributeError) as exc:
            return f"schedule state unknown: {exc}"
        return "schedule offset / queue end: " + ", ".join(parts)
