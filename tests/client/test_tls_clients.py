"""The SDK's ``tls=`` against real servers behind TLS-ending forwarders (signed_proxy.py):
``tls=True`` accepts any certificate, as Apache's client by default; a ``tls_context`` with
the right CA verifies the servers (names included); the wrong CA and plaintext clients fail,
each as an MQConnectionError naming the address."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    Message,
    MQConnectionError,
    Producer,
    PullConsumer,
    tls_context,
)
from aiorocketmq.client import api
from tests.cluster import Cluster, running
from tests.signed_proxy import ADVERTISED_SETS, Audit, forwarding, self_signed, server_context


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path / "c", ("broker-a",), ADVERTISED_SETS) as c:
        yield c


@pytest.fixture
def certs(tmp_path: Path) -> tuple[Path, Path]:
    """The servers' certificate and one nobody signed the servers' with."""
    cert, _key = self_signed(tmp_path, "server")
    other, _ = self_signed(tmp_path, "stranger")
    return cert, other


@pytest.fixture
async def tls_ns(cluster: Cluster, certs: tuple[Path, Path]) -> AsyncIterator[str]:
    """TLS in front of the name server and the broker; the name server's TLS address."""
    cert = certs[0]
    ctx = server_context(cert, cert.with_suffix(".key"))
    async with forwarding(cluster, Audit("unused"), ctx) as ns:
        yield ns


async def round_trip(ns: str, topic: str, tls: object) -> list[bytes]:
    async with Producer("pg_tls", namesrv_addr=ns, tls=tls) as p:  # type: ignore[arg-type]
        await p.send(Message(topic, b"over tls"))
    c = PullConsumer("cg_tls", namesrv_addr=ns, tls=tls,  # type: ignore[arg-type]
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    c.subscribe(topic, "*")
    got: list[bytes] = []
    async with c:
        while not got:
            got += [m.body for m in await c.poll(timeout=1.0)]
    return got


async def test_tls_true_talks_to_a_tls_cluster(tls_ns: str) -> None:
    """tls=True: a self-signed server certificate is accepted (nothing verified)."""
    assert await round_trip(tls_ns, "TlsAny", True) == [b"over tls"]


async def test_a_verifying_context_talks_to_servers_its_ca_signed(
    tls_ns: str, certs: tuple[Path, Path]
) -> None:
    """tls_context(ca_file): verified chain and names (the IPs in subjectAltName)."""
    ctx = tls_context(str(certs[0]))
    assert ctx.check_hostname
    assert await round_trip(tls_ns, "TlsCa", ctx) == [b"over tls"]


async def test_the_wrong_ca_and_plaintext_fail_to_connect(
    tls_ns: str, certs: tuple[Path, Path]
) -> None:
    """A context trusting another CA refuses the servers; a plaintext client gets no answer
    it can read. Both fail as MQConnectionError naming the name server."""
    wrong = api.Remote.open(tls=tls_context(str(certs[1])))
    try:
        with pytest.raises(MQConnectionError, match="CERTIFICATE_VERIFY_FAILED") as info:
            await wrong.invoke(tls_ns, api.get_route("TBW102"), 5.0)
        assert tls_ns in str(info.value)
    finally:
        await wrong.close()
    plain = api.Remote.open()
    try:
        with pytest.raises(MQConnectionError) as info:
            await plain.invoke(tls_ns, api.get_route("TBW102"), 5.0)
    finally:
        await plain.close()
