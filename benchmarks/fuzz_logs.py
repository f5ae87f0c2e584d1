"""Log judges: error lines, new kinds of warnings, warning storms, and whom to blame.

A log line is blamed on a request by what it names: the latest request sent before the line
whose header or body holds one of the line's values (a group, a topic, a key) -- within a
minute for a line seen while fuzzing, at any earlier time for a storm that goes on after the
fuzzing stopped (a poison pill was swallowed earlier). Failing that, the request sent last
before the line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from benchmarks.fuzz_procs import LogEvent, Server
from benchmarks.fuzz_run import Finding, Fuzzer, Sent

# values too common to blame anyone by (addresses, our own names, levels)
BORING: Final = re.compile(
    r"^(\d+(\.\d+)*(:\d+)?|true|false|none|null|[a-z_]{1,24}|\S{0,3})$", re.I
)
QUOTED: Final = re.compile(r"'([^']{4,})'|\"([^\"]{4,})\"")


def tokens(event: LogEvent) -> set[str]:
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            for text in (value, *(a or b for a, b in QUOTED.findall(value))):
                for t in (text, text.removeprefix("%RETRY%"), text.removeprefix("%DLQ%")):
                    if len(t) >= 4 and len(t) <= 100_000 and not BORING.match(t):
                        out.add(t)

    walk(event.fields)
    return out


def _text(sent: Sent) -> str:
    if sent.text is None:
        req = sent.step.req
        sent.text = " ".join((*req.ext.values(), req.body[:65536].decode("utf-8", "replace")))
    return sent.text


def suspects(
    event: LogEvent, log: Sequence[Sent], server: str, *, window: float | None, n: int = 3
) -> list[Sent]:
    """The requests ``event`` is most likely about, best first, one per case (see the module
    doc), sent to either server: a broker request may make the name server warn.

    Among the requests before it that name one of its values, ranked by: answered SUCCESS
    though its oracle wanted a refusal; answered SUCCESS at all (a refused request changes
    nothing); sent to ``server``, the one that logged it; naming a value fewest requests
    name; sent last. A line about a peer's request of some ``code`` is about that code.
    If none names any: for a storm (no ``window``) the requests accepted against an oracle,
    last first; else the requests sent to ``server`` just before the line."""
    before = [s for s in log if s.at <= event.at]
    if window is not None:
        before = [s for s in before if event.at - s.at <= window]
    code = event.fields.get("code")  # of the request, in a line about one peer's request
    if (
        "peer" in event.fields
        and isinstance(code, int)
        and any(s.step.req.code == code for s in before)
    ):
        before = [s for s in before if s.step.req.code == code and s.server == server]
    texts = [_text(s) for s in before]
    counts = {t: sum(t in text for text in texts) for t in tokens(event)}
    ranked = []
    for sent, text in zip(before, texts, strict=True):
        named = [c for t, c in counts.items() if c and t in text]
        if named:
            ok = sent.outcome == "answer" and sent.code == 0
            same = sent.server == server
            ranked.append(
                ((ok and sent.step.refuse is not None, ok, same, -min(named), sent.at), sent)
            )
    ranked.sort(key=lambda r: r[0], reverse=True)
    out: list[Sent] = []
    for _score, sent in ranked:
        if all((s.server, s.case_index) != (sent.server, sent.case_index) for s in out):
            out.append(sent)
        if len(out) == n:
            return out
    if not out:  # it names nothing
        if window is None:  # a storm: those accepted against an oracle are the usual suspects
            pool = [s for s in before if s.outcome == "answer" and s.code == 0 and s.step.refuse]
        else:  # a line a request causes at once: those in flight when it was logged
            pool = [s for s in before if s.server == server]
        for sent in reversed(pool):
            if all(s.case_index != sent.case_index or s.server != sent.server for s in out):
                out.append(sent)
            if len(out) == n:
                break
    if not out:
        mine = [s for s in before if s.server == server]
        out = mine[-1:]
    return out


IDENTITY: Final = frozenset({"namesrv", "addr", "peer", "broker", "client", "timestamp", "level"})


def signature(event: LogEvent) -> str:
    """What a line says, without the names and numbers it says it about: two lines with the
    same event and signature have the same cause."""
    text = " ".join(str(v) for k, v in sorted(event.fields.items()) if k not in IDENTITY)
    text = QUOTED.sub("'_'", text)
    return re.sub(r"\d+", "N", text)[:80]


@dataclass
class Kind:
    """One kind of notable line: its first occurrence and how many there were."""

    server: str
    level: str
    event: str
    first: LogEvent
    count: int = 0
    blamed: Sent | None = None


def kinds(servers: Sequence[Server], since: float, until: float) -> Iterator[Kind]:
    for server in servers:
        seen: dict[tuple[str, str], Kind] = {}
        for e in server.events_since(since):
            if e.at >= until:
                continue
            kind = seen.get((e.level, e.event))
            if kind is None:
                kind = seen[(e.level, e.event)] = Kind(server.name, e.level, e.event, e)
            kind.count += 1
        yield from seen.values()


def storms(servers: Sequence[Server], since: float, until: float, floor: float = 0.5) -> list[Kind]:
    """Kinds of warnings that went on at ``floor``/s or more over [since, until): after the
    fuzzing stopped, a steady stream means something is stuck (a poison pill)."""
    seconds = max(until - since, 1.0)
    return [k for k in kinds(servers, since, until) if k.count / seconds >= floor]


def by_event(events: Sequence[LogEvent], since: float, until: float) -> Counter[str]:
    return Counter(e.event for e in events if since <= e.at < until and e.level == "warning")


def short(fields: dict[str, Any], limit: int = 300) -> str:
    text = " ".join(f"{k}={v!r}" for k, v in fields.items() if k not in ("timestamp",))
    return text if len(text) <= limit else text[:limit] + "..."


def first_ever(server: Server, like: LogEvent) -> LogEvent:
    """The first line the server logged like ``like`` (same event and signature): a storm's
    culprit came before its first line, not before the first line of the quiet window."""
    want = signature(like)
    found = [e for e in server.events_since(0.0) if e.event == like.event]
    return next((e for e in found if signature(e) == want), like)


def log_findings(
    servers: Sequence[Server], fuzzers: Sequence[Fuzzer], quiet: tuple[float, float]
) -> tuple[list[Finding], int]:
    """(findings, error lines): error lines (one finding per event), output that is not a
    JSON log line, and warning storms after the fuzzing, each with its suspects."""
    log = sorted((s for f in fuzzers for s in f.log), key=lambda s: s.at)
    owner = {f.kind: f for f in fuzzers}
    findings: dict[str, Finding] = {}

    def add(key: str, kind: str, summary: str, event: LogEvent | None, blamed: list[Sent]) -> None:
        if key in findings:
            findings[key].seen += 1
            return
        main = blamed[0] if blamed else None
        fz = owner[main.server] if main is not None else fuzzers[0]
        name, steps = fz.cases.get(main.case_index, ("?", [])) if main else ("?", [])
        found = Finding(kind, fz.kind, summary, name, main.case_index if main else -1,
                        fz.seed, list(steps))  # fmt: skip
        if event is not None:
            found.event, found.signature = event.event, signature(event)
            found.storm = kind == "warning_storm"
        found.suspects = [(s.server, s.case_index) for s in blamed[1:]]
        findings[key] = found

    errors = 0
    for server in servers:
        for e in server.errors():
            errors += 1
            blamed = suspects(e, log, server.name, window=60)
            summary = f"{server.name} logged {e.level} {e.event}: {short(e.fields)}"
            add(f"error:{server.name}:{e.event}", "error_log", summary, e, blamed)
        for line in server.raw[:5]:
            summary = f"{server.name} printed a non-JSON line: {line[:200]!r}"
            add(f"raw:{server.name}:{line[:40]}", "stray_output", summary, None, [])
    seconds = max(quiet[1] - quiet[0], 1.0)
    for storm in storms(servers, *quiet):
        server = next(s for s in servers if s.name == storm.server)
        first = first_ever(server, storm.first)
        # a poison pill may be swallowed seconds before it shows (a delay level's wait), with
        # other requests naming the same thing in between: five suspects, not three
        blamed = suspects(first, log, storm.server, window=None, n=5)
        summary = (f"{storm.server} kept logging {storm.event} at {storm.count / seconds:.1f}/s "
                   f"after the fuzzing stopped: {short(storm.first.fields)}")  # fmt: skip
        add(f"storm:{storm.server}:{storm.event}", "warning_storm", summary, first, blamed)
    return list(findings.values()), errors
