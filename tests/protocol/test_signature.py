"""ACL 1.0 signatures (protocol.md 12.7, fidelity.md 3.5): the content and the HMAC a 4.9.8
client computes (AclClientRPCHook), checked against a vector made with ``openssl dgst``."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.signature import (
    CLIENT_SKIP,
    SERVER_SKIP,
    Credentials,
    content,
    sign,
    signature,
    verify,
)

# printf 'RocketMQgxTbody' | openssl dgst -sha1 -hmac 12345678 -binary | base64
VECTOR = "Ca0W/YRQ6OJeARGq7IYGw7hlYrU="


def test_sign_adds_the_access_key_and_signs_the_values_in_key_order() -> None:
    cmd = RemotingCommand.request(10, {"topic": "T", "b": "x", "a": "g"}, b"body")
    sign(cmd, Credentials("RocketMQ", "12345678"))
    # AccessKey < a < b < topic (Java String order): values, then the body
    assert cmd.ext_fields["AccessKey"] == "RocketMQ"
    assert cmd.ext_fields["Signature"] == VECTOR
    assert signature("12345678", b"RocketMQgxTbody") == VECTOR


def test_signing_again_re_signs_and_the_token_is_signed() -> None:
    cmd = RemotingCommand.request(10, {"topic": "T"})
    creds = Credentials("RocketMQ", "12345678", security_token="tok")
    sign(cmd, creds)
    first = cmd.ext_fields["Signature"]
    sign(cmd, creds)
    assert cmd.ext_fields["Signature"] == first
    assert content(cmd.ext_fields, b"") == b"RocketMQtokT"  # Signature itself is skipped


def test_java_string_order_is_utf16_code_units() -> None:
    # U+FF21 sorts after U+1F600 by code point, before it by UTF-16 unit (0xFF21 > 0xD83D)
    ext = {"\uff21": "1", "\U0001f600": "2"}
    assert content(ext, None) == b"21"


def test_the_server_leaves_unique_key_query_out_and_compares_in_constant_time() -> None:
    """fidelity.md 3.5: a 4.9.8 broker rebuilds the content without _UNIQUE_KEY_QUERY."""
    cmd = RemotingCommand.request(12, {"topic": "T", "_UNIQUE_KEY_QUERY": "true"})
    sign(cmd, Credentials("RocketMQ", "12345678"))
    assert not verify(cmd.ext_fields, cmd.body, "12345678")  # the 4.9.8 quirk
    del cmd.ext_fields["_UNIQUE_KEY_QUERY"]
    sign(cmd, Credentials("RocketMQ", "12345678"))
    assert verify(cmd.ext_fields, cmd.body, "12345678")
    assert not verify(cmd.ext_fields, cmd.body, "12345670")
    assert not verify({"topic": "T"}, b"", "12345678")  # no signature at all


def test_credentials_hide_the_secret() -> None:
    creds = Credentials("RocketMQ", "s3cr3t-value", "t0ken-value")
    assert "s3cr3t" not in repr(creds) and "t0ken" not in repr(creds)
    assert "s3cr3t" not in str(creds)
    with pytest.raises(ValueError, match="non-empty"):
        Credentials("RocketMQ", "")


@pytest.mark.parametrize("secret", ["12345678", "k" * 64, "long-" * 30, "sécret-ü"])
def test_the_precomputed_hmac_is_hmac_sha1(secret: str) -> None:
    """The cached pads give what the standard library's HMAC gives, for keys shorter and
    longer than SHA-1's block and non-ASCII ones."""
    for data in (b"", b"RocketMQgxTbody", bytes(range(256)) * 9):
        expected = base64.b64encode(hmac.new(secret.encode(), data, hashlib.sha1).digest())
        assert signature(secret, data) == expected.decode()


# keys of a few shapes with as many keys outside the skip sets: the getters found by count
KEYS = ("a", "b", "c", "topic", "AccessKey", "Signature", "_UNIQUE_KEY_QUERY", "\uff21")


def _reference(ext: dict[str, str], body: bytes, skip: frozenset[str], secret: str) -> str:
    keys = sorted((k for k in ext if k not in skip), key=lambda k: k.encode("utf-16-be"))
    data = "".join(ext[k] for k in keys).encode() + body
    return base64.b64encode(hmac.new(secret.encode(), data, hashlib.sha1).digest()).decode()


@given(st.lists(st.dictionaries(st.sampled_from(KEYS), st.text(max_size=3), max_size=6),
                min_size=1, max_size=12))  # fmt: skip
def test_each_request_is_signed_and_verified_over_its_own_keys(exts: list[dict[str, str]]) -> None:
    """Requests of different key sets, orders and sizes one after another (the getters cached
    per key count and per shape): each content is its own keys' values in Java order, on the
    client's side (sign, CLIENT_SKIP) and the server's (verify, SERVER_SKIP)."""
    secret = "12345678"
    for ext in exts:
        server = dict(ext, Signature=_reference(ext, b"b", SERVER_SKIP, secret))
        assert verify(server, b"b", secret)
        assert not verify(server, b"x", secret)
        swapped = dict(server)
        if "_UNIQUE_KEY_QUERY" in swapped:  # a skipped key traded for a signed one
            swapped["zz"] = swapped.pop("_UNIQUE_KEY_QUERY")
            assert not verify(swapped, b"b", secret) or swapped["zz"] == ""
        cmd = RemotingCommand.request(10, dict(ext), b"b")
        sign(cmd, Credentials("RocketMQ", secret))
        signed = {k: v for k, v in cmd.ext_fields.items() if k != "Signature"}
        assert cmd.ext_fields["Signature"] == _reference(signed, b"b", CLIENT_SKIP, secret)
        assert content(ext, b"b") == content(dict(reversed(ext.items())), b"b")
