"""TLS on the shared port (features.md 8, issue 32 item 3): a RemotingServer in this process on
port 0, real sockets, certificates made in the run (tests/tls_certs.py).

The same port tells TLS from plaintext on the first byte; enforcing never processes a
plaintext request (not Apache's r#10110); disabled refuses TLS; client authentication none,
optional and require; a CA-signed and a self-signed setup; keys in PKCS#8 and traditional
form, with a password; a stalled handshake is closed and holds nobody up.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.errors import ConfigError, RemotingConnectError
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.frame import encode
from aiorocketmq.remoting.server import RemotingServer
from aiorocketmq.remoting.tls_config import ClientAuth, TlsConfig, TlsMode
from aiorocketmq.remoting.tls_context import ServerTls, client_context, server_context
from tests.remoting.wire import RawPeer, request
from tests.tls_certs import CA, Pair, self_signed
from tests.util import wait_until

ECHO = 1


class Served:
    """The routes of a test server, counting every request handled."""

    def __init__(self) -> None:
        self.handled: list[RemotingCommand] = []
        self.peercerts: list[object] = []

    async def echo(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        self.handled.append(req)
        transport = ch._transport
        self.peercerts.append(None if transport is None else transport.get_extra_info("peercert"))
        return response_to(req, ResponseCode.SUCCESS, ext_fields=dict(req.ext_fields),
                           body=req.body)  # fmt: skip

    def routes(self) -> dict[int, Route]:
        return {ECHO: Route(self.echo)}


@pytest.fixture
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | Pair]:
    """One CA with a server and a client certificate, another CA's client, a self-signed
    server; RSA keys where Apache's guide uses them."""
    root = tmp_path_factory.mktemp("pki")
    ca, other = CA(root, "cluster"), CA(root, "stranger")
    return {
        "ca": ca.path,
        "server": ca.issue("server", kind="rsa", fmt="pkcs8", password="s3cret"),
        "client": ca.issue("client", client=True, fmt="traditional", password="pw"),
        "stranger": other.issue("stranger", client=True),
        "self": self_signed(root, "selfsigned", kind="rsa", fmt="traditional"),
    }


def server_tls(
    pair: Pair, mode: TlsMode, auth: ClientAuth = ClientAuth.none, trust: Path | None = None,
    timeout: float = 10.0,
) -> ServerTls:  # fmt: skip
    config = TlsConfig(
        server_mode=mode,
        server_cert_path=str(pair.cert),
        server_key_path=str(pair.key),
        server_key_password=pair.password or "",
        server_need_client_auth=auth,
        server_trust_cert_path=str(trust or ""),
    )
    return ServerTls(mode, server_context(config), timeout)


@pytest.fixture
async def servers() -> AsyncIterator[list[RemotingServer]]:
    started: list[RemotingServer] = []
    yield started
    for server in started:
        await server.close(drain_timeout=1.0)


async def serve(
    started: list[RemotingServer], served: Served, tls: ServerTls, **config: object
) -> RemotingServer:
    cfg = ServerConfig(listen_port=0, bind_address="127.0.0.1", **config)  # type: ignore[arg-type]
    server = RemotingServer(served.routes(), cfg, tls=tls)
    await server.start()
    started.append(server)
    return server


async def echo(tls: ssl.SSLContext | None, port: int, body: bytes = b"hi") -> RemotingCommand:
    client = RemotingClient(tls=tls)
    try:
        resp = await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO, body=body))
    finally:
        await client.close()
    assert resp.code == ResponseCode.SUCCESS
    assert resp.body == body
    return resp


def plaintext_frame() -> bytes:
    head, body = encode(request(ECHO, 7))
    return head + body


async def test_permissive_serves_plaintext_and_tls_on_one_port(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """Permissive: the first byte decides; both kinds of client are served on one port."""
    served = Served()
    server_pair = pki["server"]
    assert isinstance(server_pair, Pair)
    server = await serve(servers, served, server_tls(server_pair, TlsMode.permissive))
    tls = client_context(ca_file=str(pki["ca"]))
    await echo(None, server.port)
    await echo(tls, server.port, b"x" * (3 << 20))  # many TLS records each way
    assert len(served.handled) == 2
    assert len(server.channels) == 0 or all(ch.is_open for ch in server.channels)


async def test_enforcing_processes_nothing_from_a_plaintext_client(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """Enforcing: a plaintext connection is closed and its request never handled (4.9.8 still
    handles the first packet, r#10110); TLS clients are served."""
    served = Served()
    server_pair = pki["server"]
    assert isinstance(server_pair, Pair)
    server = await serve(servers, served, server_tls(server_pair, TlsMode.enforcing))
    peer = await RawPeer.connect(server.port)
    with capture_logs() as logs:
        peer.send_raw(plaintext_frame() * 3)
        assert await peer.closed_by_peer()
    assert served.handled == []
    assert not server.channels
    assert any(e["event"] == "connection_refused" and "enforcing" in e["reason"] for e in logs)
    await echo(client_context(ca_file=str(pki["ca"])), server.port)
    assert len(served.handled) == 1
    with pytest.raises(RemotingConnectError):
        await echo(None, server.port)  # our own client, plaintext: refused the same way
    assert len(served.handled) == 1


async def test_disabled_refuses_a_tls_client(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """Disabled (our default): a TLS handshake is closed with a log line; plaintext served."""
    served = Served()
    server = await serve(servers, served, ServerTls())
    with capture_logs() as logs, pytest.raises(RemotingConnectError):
        await echo(client_context(ca_file=str(pki["ca"])), server.port)
    assert any(e["event"] == "connection_refused" and "TLS" in e["reason"] for e in logs)
    assert served.handled == []
    await echo(None, server.port)


@pytest.mark.parametrize("auth", [ClientAuth.require, ClientAuth.optional])
async def test_client_authentication(
    pki: dict[str, Path | Pair], servers: list[RemotingServer], auth: ClientAuth
) -> None:
    """require: a client without a certificate, or with one of another CA, is refused;
    optional: one without is served, one with a bad certificate refused; a client with the
    CA's certificate is served and the server sees it."""
    served = Served()
    server_pair, client_pair, stranger = pki["server"], pki["client"], pki["stranger"]
    assert isinstance(server_pair, Pair) and isinstance(client_pair, Pair)
    assert isinstance(stranger, Pair)
    ca = str(pki["ca"])
    tls = server_tls(server_pair, TlsMode.enforcing, auth, trust=pki["ca"])  # type: ignore[arg-type]
    server = await serve(servers, served, tls)
    anonymous = client_context(ca_file=ca)
    if auth is ClientAuth.require:
        with capture_logs() as logs, pytest.raises(RemotingConnectError):
            await echo(anonymous, server.port)
        assert served.handled == []
        await wait_until(lambda: any(e["event"] == "tls_handshake_failed" for e in logs))
    else:
        await echo(anonymous, server.port)
        assert served.peercerts[-1] in (None, {})
    with pytest.raises(RemotingConnectError):
        await echo(client_context(ca_file=ca, cert_file=str(stranger.cert),
                                  key_file=str(stranger.key)), server.port)  # fmt: skip
    handled = len(served.handled)
    known = client_context(
        ca_file=ca,
        cert_file=str(client_pair.cert),
        key_file=str(client_pair.key),
        key_password=client_pair.password,
    )
    await echo(known, server.port)
    assert len(served.handled) == handled + 1
    cert = served.peercerts[-1]
    assert isinstance(cert, dict)
    assert cert["subject"] == ((("commonName", "client"),),)


async def test_self_signed_server(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """A self-signed certificate (traditional RSA key, no password): a client trusting it is
    served; one checking against the system's CAs refuses the server; verify=False (Apache's
    default client) connects."""
    served = Served()
    pair = pki["self"]
    assert isinstance(pair, Pair)
    server = await serve(servers, served, server_tls(pair, TlsMode.enforcing))
    await echo(client_context(ca_file=str(pair.cert), check_hostname=True), server.port)
    with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await echo(client_context(), server.port)
    await echo(client_context(verify=False), server.port)
    assert len(served.handled) == 2


async def test_a_stalled_handshake_is_closed_and_holds_nobody(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """A client that starts a TLS record and stops is closed after the handshake timeout; other
    clients are served meanwhile, and nothing of it is left in the server."""
    served = Served()
    pair = pki["server"]
    assert isinstance(pair, Pair)
    server = await serve(servers, served, server_tls(pair, TlsMode.permissive, timeout=0.5))
    stalled = [await RawPeer.connect(server.port) for _ in range(20)]
    with capture_logs() as logs:
        for peer in stalled:
            peer.send_raw(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello record begun, no more
        await echo(client_context(ca_file=str(pki["ca"])), server.port)
        await echo(None, server.port)
        for peer in stalled:
            assert await peer.closed_by_peer(timeout=10)
    assert sum(e["event"] == "tls_handshake_failed" for e in logs) >= 1  # once a minute
    assert "not finished within 0.5 s" in str(logs)
    assert not server._unserved


async def test_garbage_after_the_tls_byte_is_closed(
    pki: dict[str, Path | Pair], servers: list[RemotingServer]
) -> None:
    """A first byte of 0x16 and then no TLS: the handshake fails, nothing is handled."""
    served = Served()
    pair = pki["server"]
    assert isinstance(pair, Pair)
    server = await serve(servers, served, server_tls(pair, TlsMode.permissive))
    peer = await RawPeer.connect(server.port)
    peer.send_raw(b"\x16" + plaintext_frame())
    assert await peer.closed_by_peer()
    assert served.handled == []


async def test_a_silent_connection_is_closed_after_the_idle_time(
    servers: list[RemotingServer],
) -> None:
    """A connection that never sends its first byte is closed as an idle channel would be."""
    server = await serve(servers, Served(), ServerTls(), server_channel_max_idle_time_seconds=1)
    peer = await RawPeer.connect(server.port)
    assert await peer.closed_by_peer(timeout=10)
    assert not server._unserved


def test_bad_keys_are_one_line_config_errors(pki: dict[str, Path | Pair], tmp_path: Path) -> None:
    """A wrong password, a missing file, a mode without a certificate: ConfigError naming the
    key (and for a key that will not load, the likely reasons: RC4-PBE keys among them)."""
    pair = pki["server"]
    assert isinstance(pair, Pair)
    wrong = TlsConfig(server_mode=TlsMode.enforcing, server_cert_path=str(pair.cert),
                      server_key_path=str(pair.key), server_key_password="wrong")  # fmt: skip
    with pytest.raises(ConfigError, match=r"tls\.server\.keyPath=.*RC4"):
        server_context(wrong)
    missing = TlsConfig(server_mode=TlsMode.enforcing, server_cert_path=str(tmp_path / "no.pem"),
                        server_key_path=str(pair.key))  # fmt: skip
    with pytest.raises(ConfigError, match=r"tls\.server\.certPath: no such file"):
        server_context(missing)
    with pytest.raises(ConfigError, match=r"tls\.client\.trustCertPath: no such file"):
        client_context(ca_file=str(tmp_path / "none.pem"))
