"""Scraping a server's /metrics as Prometheus does, parsed with prometheus_client's parser;
raw HTTP for the requests a scraper would never send; the TCP ports a process listens on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def http(
    port: int, raw: bytes, *, half_close: bool = False, timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` to 127.0.0.1:``port`` (then shut our side with ``half_close``); the
    status, headers and body of the answer (the server closes after it)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        if half_close:
            writer.write_eof()
        async with asyncio.timeout(timeout):
            answer = await reader.read()
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split(" ")[1]), headers, body


def get(path: str = "/metrics", token: str | None = None, method: str = "GET") -> bytes:
    """A scraper's request for ``path``, with ``Authorization: Bearer <token>`` when given
    (what Prometheus sends with ``authorization: credentials_file:``)."""
    auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
    return f"{method} {path} HTTP/1.1\r\nHost: t\r\n{auth}\r\n".encode()


async def scrape(port: int, token: str | None = None) -> Samples:
    """GET /metrics (with ``token`` as a bearer token), checked and parsed: every sample by
    (name, labels)."""
    status, headers, body = await http(port, get(token=token))
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert int(headers["content-length"]) == len(body)
    out: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels``; 0 when there is none (a counter not yet
    counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def matching(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """Every sample ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {lbl: v for (n, lbl), v in samples.items() if n == name and want <= lbl}


def buckets(samples: Samples, name: str, **labels: str) -> list[tuple[float, float]]:
    """A histogram's ``(le, cumulative count)`` pairs, by bound."""
    found = matching(samples, name + "_bucket", **labels)
    return sorted((float(dict(lbl)["le"]), v) for lbl, v in found.items())


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (its sockets in LISTEN state, from /proc)."""
    return {port for _host, port in listening_addrs(pid)}


def listening_addrs(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs process ``pid`` listens on over TCP, IPv4 addresses dotted
    (``0.0.0.0``: every interface), IPv6 ones as /proc shows them (32 hex digits)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addrs = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                host, port = fields[1].rsplit(":", 1)
                if len(host) == 8:  # IPv4, the bytes of a little-endian word
                    host = ".".join(str(int(host[i : i + 2], 16)) for i in (6, 4, 2, 0))
                addrs.add((host, int(port, 16)))
    return addrs


def grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    """How much ``name`` with ``labels`` grew between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)
