"""Drives cases at one server and judges each answer: findings, with their reproducers.

Cases are numbered per server; case ``i`` of seed ``s`` is built from ``Random(f"{s}:{server}:
{i}")``, so a run's requests are the same each time (with ``workers`` > 1 their interleaving,
and so the server's state, may differ a little). A finding is kept once per key (its kind,
the code, what was wrong) with the case that showed it first and how often it was seen.

Judged at once, per answer:
- ``no_answer``: nothing within the timeout (except where none is due: a name server and a
  code it does not know; an END_TRANSACTION that neither commits nor rolls back; a pull
  asked to wait);
- ``closed``: the server closed the connection on a request written in valid UTF-8;
- ``slow``: an answer after ``SLOW`` seconds;
- ``accepted``: SUCCESS for a request the step's oracle says must be refused, or for a header
  holding a lone surrogate;
- ``leaky_remark``: a remark quoting a Python exception.

A server that dies (or that the memory guard kills) is started again, up to MAX_REVIVALS
times, after which the broker's topics with too many queues to walk are deleted (``_disarm``);
closes and timeouts around a death are not findings (``forget_outages``).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from benchmarks.fuzz_cases import Step, choose, dump, namesrv_silent
from benchmarks.fuzz_procs import Server
from benchmarks.fuzz_values import World
from benchmarks.fuzz_wire import Closed, Conn, Req, fits

TIMEOUT: Final = 10.0
SLOW: Final = 3.0  # an answer this late is a finding (a request that holds the server up)
MAX_REVIVALS: Final = 8
MANY_QUEUES: Final = 65536
OUTAGE_LEAD: Final = 30.0  # seconds before a death whose closes and timeouts it explains
SILENT_TIMEOUT: Final = 0.25  # a name server's non-answer to an unknown code
LEAKS: Final = re.compile(
    r"Traceback|object has no attribute|unsupported operand|NoneType|invalid literal for int|"
    r"maximum recursion depth|unhashable type|struct\.error|can't concat|argument out of range|"
    r"not subscriptable|takes \d+ positional"
)


@dataclass
class Sent:
    server: str
    case: str
    case_index: int
    step: Step
    at: float
    outcome: str = "pending"  # answer, no_answer, silent, held, closed, unsendable
    code: int | None = None
    remark: str | None = None
    answer: RemotingCommand | None = None
    text: str | None = None  # its header values and body as text, once a judge asked
    took: float = 0.0  # seconds to the answer


@dataclass
class Finding:
    kind: str
    server: str
    summary: str
    case: str
    case_index: int
    seed: int
    steps: list[Step]
    seen: int = 1
    verdict: str = ""  # from a replay on fresh servers, when one was made
    event: str = ""  # the log event it is about (error lines, storms)
    signature: str = ""  # that event's text without names and numbers (fuzz_logs.signature)
    storm: bool = False  # the event went on after the fuzzing: a replay must show it go on
    memory_mib: float = 0.0  # how much RSS it took (memory findings): a replay must take as much
    suspects: list[tuple[str, int]] = field(default_factory=list)  # other (server, case)s

    def reproducer(self) -> str:
        return dump(self.steps)


@dataclass
class Tally:
    sent: int = 0
    cases: int = 0
    by_code: Counter[str] = field(default_factory=Counter)  # response code (or outcome)
    by_format: Counter[str] = field(default_factory=Counter)
    codes_tried: set[int] = field(default_factory=set)


NAME_KEYS: Final = ("topic", "b", "consumerGroup", "group", "groupName")
CREATES: Final = (C.UPDATE_AND_CREATE_TOPIC, C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, C.HEART_BEAT)
_BODY_NAMES: Final = re.compile(rb'"(?:groupName|topic)":"((?:[^"\\]|\\.)*)"')


def names(steps: list[Step]) -> set[str]:
    """The topics and groups the steps' requests name (header fields, body JSON)."""
    out = {s.req.ext[k] for s in steps for k in NAME_KEYS if k in s.req.ext}
    for s in steps:
        out |= {m.decode(errors="replace") for m in _BODY_NAMES.findall(s.req.body[:65536])}
    return out


def case_rng(seed: int, server: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{server}:{index}")


def clean_text(req_ext: dict[str, str]) -> bool:
    """Whether every header key and value is valid UTF-8 (no lone surrogate)."""
    try:
        "".join((*req_ext, *req_ext.values())).encode()
    except UnicodeEncodeError:
        return False
    return True


class Fuzzer:
    def __init__(self, server: Server, kind: str, seed: int, world: World, budget: int,
                 workers: int = 4) -> None:  # fmt: skip
        self.server = server
        self.kind = kind
        self.seed = seed
        self.world = world
        self.budget = budget
        self.workers = workers
        self.tally = Tally()
        self.log: list[Sent] = []
        self.findings: dict[str, Finding] = {}
        self.cases: dict[int, tuple[str, list[Step]]] = {}
        self._next_case = 0
        self.dead = False
        self.revivals = 0  # restarts after it died
        self._reviving = asyncio.Lock()
        self._seen: dict[str, list[tuple[float, str, str, int, list[Step]]]] = {}
        self.outages: list[tuple[float, float]] = []  # from a while before it died to its restart
        self._died_at: float | None = None
        self.disarmed: list[str] = []  # topics deleted after a death (see _disarm)

    def add(
        self, key: str, kind: str, summary: str, case: tuple[str, int, list[Step]], at: float = 0.0
    ) -> None:
        seen = self._seen.setdefault(key, [])
        if len(seen) < 20:
            seen.append((at, summary, *case))
        found = self.findings.get(key)
        if found is not None:
            found.seen += 1
            return
        name, index, steps = case
        self.findings[key] = Finding(kind, self.kind, summary, name, index, self.seed, list(steps))

    def forget_outages(self) -> int:
        """Drop what a dying server did to the requests around its death (closed connections,
        no answers, slow ones): not findings of those requests. Returns how many it dropped."""
        if self._died_at is not None:  # it died for good: the outage lasts to the end
            self.outages.append((self._died_at - OUTAGE_LEAD, float("inf")))
            self._died_at = None
        dropped = 0
        for key, found in list(self.findings.items()):
            if found.kind not in ("closed", "no_answer", "slow"):
                continue
            seen = self._seen.get(key, [])
            kept = [o for o in seen if not self._in_outage(o[0])]
            dropped += len(seen) - len(kept)
            if not kept:
                del self.findings[key]
            else:
                _at, found.summary, found.case, found.case_index, found.steps = kept[0]
                found.seen -= len(seen) - len(kept)
        return dropped

    def prelude(self, index: int, n: int = 6) -> list[int]:
        """The earlier cases that made what case ``index`` names (a topic or group created,
        a heartbeat for a group, answered SUCCESS): replayed before it, they rebuild the state
        it met. At most ``n``, in order."""
        wanted = names(self.cases.get(index, ("", []))[1])
        out: list[int] = []
        for sent in reversed(self.log):
            i = sent.case_index
            if i >= index or i in out or sent.step.req.code not in CREATES:
                continue
            if sent.outcome == "answer" and sent.code == 0 and names([sent.step]) & wanted:
                out.append(i)
                if len(out) == n:
                    break
        return sorted(out)

    def _in_outage(self, at: float) -> bool:
        return any(start <= at <= end for start, end in self.outages)

    async def run(self, on_progress: Callable[[], None] | None = None) -> None:
        await asyncio.gather(*(self._worker(on_progress) for _ in range(self.workers)))

    async def _worker(self, on_progress: Callable[[], None] | None) -> None:
        conn = Conn(self.server.addr)
        try:
            while self.tally.sent < self.budget and not self.dead:
                index = self._next_case
                self._next_case += 1
                await self.run_case(conn, index)
                if self.dead and self.revivals < MAX_REVIVALS:
                    await self._revive()
                if on_progress is not None:
                    on_progress()
        finally:
            await conn.close()

    async def _revive(self) -> None:
        """Start the server again (same port and store) after it died or was killed, and go
        on fuzzing it; a server that keeps dying is given up after MAX_REVIVALS."""
        async with self._reviving:
            if self.server.alive() or not self.dead:
                return
            self.revivals += 1
            died = self._died_at or time.monotonic()
            try:
                await asyncio.to_thread(self.server.restart, crash=True)
            except RuntimeError:
                return  # it does not start: stays dead (a finding of its own)
            self.outages.append((died - OUTAGE_LEAD, time.monotonic()))
            self._died_at = None
            self.dead = False
            if self.kind == "broker":
                await self._disarm()

    async def _disarm(self) -> None:
        """As an operator would after such a death: delete the topics with more than
        ``MANY_QUEUES`` queues (walking them is what took the memory so far), so the rest of
        the run is not one death after another. Noted in ``disarmed``."""
        conn = Conn(self.server.addr)
        try:
            resp = await conn.call(Req(C.GET_ALL_TOPIC_CONFIG, stype=0), TIMEOUT)
            table = json.loads(resp.body or b"{}").get("topicConfigTable") or {}
            for name, config in table.items():
                queues = max(
                    int(config.get("readQueueNums", 0)), int(config.get("writeQueueNums", 0))
                )
                if queues > MANY_QUEUES:
                    await conn.call(
                        Req(C.DELETE_TOPIC_IN_BROKER, {"topic": name}, stype=0), TIMEOUT
                    )
                    self.disarmed.append(f"{name[:40]} ({queues} queues)")
        except (TimeoutError, Closed, ValueError, AttributeError):
            pass
        finally:
            await conn.close()

    async def run_case(self, conn: Conn, index: int) -> list[Sent]:
        rng = case_rng(self.seed, self.kind, index)
        name, make = choose(self.kind, rng)
        gen = make(self.world, rng)
        steps: list[Step] = []
        sent: list[Sent] = []
        self.cases[index] = (name, steps)
        self.tally.cases += 1
        try:
            step = next(gen)
            while True:
                steps.append(step)
                one = await self.send(conn, step, name, index)
                sent.append(one)
                self.judge(one, (name, index, steps))
                if not self.server.alive():
                    self.dead = True
                    self._died_at = self._died_at or time.monotonic()
                    code = self.server.proc.returncode if self.server.proc else None
                    if code != -9 or "memory" not in self.findings:  # -9: the memory guard
                        said = f"{self.kind} exited ({code})"
                        self.add(f"crash:{code}", "crash", said, (name, index, steps))
                    break
                answer, one.answer = one.answer, None  # answers can be big: not kept
                step.req.forget_body()
                step = gen.send(answer)
        except StopIteration:
            pass
        return sent

    async def send(self, conn: Conn, step: Step, case: str, index: int) -> Sent:
        req = step.req
        one = Sent(self.kind, case, index, step, time.monotonic())
        self.log.append(one)
        if not fits(req):
            req.stype = 0  # the binary header cannot carry this code: JSON
        self.tally.sent += 1
        self.tally.codes_tried.add(req.code)
        self.tally.by_format[("json", "rocketmq", "msgpack")[req.stype]] += 1
        silent = (self.kind == "namesrv" and namesrv_silent(req.code)) or _pending_end(
            req.ext, req.code
        )
        timeout = SILENT_TIMEOUT if silent else TIMEOUT
        clean = clean_text(req.ext)
        try:
            try:
                resp = await conn.call(req, timeout)
            except Closed:
                if not clean:
                    raise
                # the connection may have been closed for an earlier request (one the server
                # could not decode, still on its way when this one went): once more, alone
                again = Conn(self.server.addr)
                try:
                    resp = await again.call(req, timeout)
                finally:
                    await again.close()
            finally:
                if not clean:  # the server may close this connection: the next request
                    await conn.close()  # starts on a new one
        except TimeoutError:
            one.outcome = "silent" if silent else "no_answer"
            if req.code == C.PULL_MESSAGE and _suspends(req.ext):
                one.outcome = "held"
            self.tally.by_code[one.outcome] += 1
            return one
        except (Closed, OSError):
            one.outcome = "closed"
            self.tally.by_code["closed"] += 1
            return one
        except (struct.error, OverflowError) as exc:  # no format can carry it: a harness gap
            one.outcome = "unsendable"
            self.tally.by_code[f"unsendable: {exc}"[:60]] += 1
            return one
        one.outcome, one.code, one.remark, one.answer = "answer", resp.code, resp.remark, resp
        one.took = time.monotonic() - one.at
        self.tally.by_code[str(resp.code)] += 1
        return one

    def judge(self, one: Sent, case: tuple[str, int, list[Step]]) -> None:
        req, code = one.step.req, one.step.req.code
        name = C(code).name if code in C._value2member_map_ else str(code)
        if one.outcome == "no_answer":
            said = f"{name}: no answer in {TIMEOUT:.0f} s"
            self.add(f"no_answer:{code}", "no_answer", said, case, one.at)
        elif one.outcome == "closed" and clean_text(req.ext):
            said = f"{name}: connection closed on a valid-UTF-8 request"
            self.add(f"closed:{code}", "closed", said, case, one.at)
        elif one.outcome == "answer":
            if one.took > SLOW and not (code == C.PULL_MESSAGE and _suspends(req.ext)):
                said = f"{name}: answered ({one.code}) only after {one.took:.1f} s"
                self.add(f"slow:{code}", "slow", said, case, one.at)
            if one.code == 0 and not clean_text(req.ext):
                said = f"{name} answered SUCCESS to a header holding a lone surrogate"
                self.add(f"accepted:{code}:surrogate", "accepted", said, case)
            ignored = code == C.UPDATE_BROKER_CONFIG and "ignored" in (one.remark or "")
            if one.code == 0 and one.step.refuse and not ignored:  # an unknown key is ignored
                for reason in one.step.refuse.split("; "):  # a finding per kind of reason
                    kind = re.sub(r"-?\d{3,}", "N", reason)
                    said = f"{name} answered SUCCESS to: {one.step.refuse}"
                    self.add(f"accepted:{code}:{kind}", "accepted", said, case)
            if one.remark and LEAKS.search(one.remark):
                said = f"{name} answered {one.code} with a Python error: {one.remark[:160]!r}"
                self.add(f"leak:{code}", "leaky_remark", said, case)


def _pending_end(ext: dict[str, str], code: int) -> bool:
    """END_TRANSACTION neither committing nor rolling back: logged, never answered (as in
    Java's EndTransactionProcessor)."""
    if code != C.END_TRANSACTION:
        return False
    try:
        return int(ext.get("commitOrRollback", "")) not in (8, 12)
    except ValueError:
        return False


def _suspends(ext: dict[str, str]) -> bool:
    try:
        return bool(int(ext.get("sysFlag", "0")) & 2)
    except ValueError:
        return False
