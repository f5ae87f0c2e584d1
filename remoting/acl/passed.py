"""A memo of the checks a request already passed (a hot path: every signed send and pull).

Under one set of rules, the outcome of steps 1-4 and 6-8 of the check (validator.py) depends
only on the peer, the access key, the code and the resources the request names; only the
signature (step 5) is new in each request. So a send or pull whose peer, access key, code and
resource fields (``RESOURCE_FIELDS``) match one let through before needs its signature
verified and nothing more: the same answer, in the same order of checks, as checking it whole
(a failing signature is the first failure either way, as everything before it passed). Only
passes are kept; a new ``Rules`` (a reload) empties the memo; it holds at most ``LIMIT``
entries. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.acl.resources import RESOURCE_FIELDS
from aiorocketmq.remoting.acl.rules import Account, Rules
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.signature import ACCESS_KEY

LIMIT: Final = 4096  # entries; a client inventing topics only empties the memo

Key = tuple[str, str | None, int, str | None, str | None]


class Passed:
    """``key(cmd, peer)`` (None: a code not memoised), ``get(rules, key)`` and ``white(key)``,
    ``put(...)``."""

    __slots__ = ("_entries", "_rules")

    def __init__(self) -> None:
        self._rules: Rules | None = None
        self._entries: dict[Key, Account | None] = {}

    @staticmethod
    def key(cmd: RemotingCommand, peer: str) -> Key | None:
        fields = RESOURCE_FIELDS.get(cmd.code)
        if fields is None:
            return None
        ext = cmd.ext_fields
        return (peer, ext.get(ACCESS_KEY), cmd.code, ext.get(fields[0]), ext.get(fields[1]))

    def get(self, rules: Rules, key: Key) -> Account | None:
        """The account to verify the signature of, if ``key`` passed as a signed request (one
        dict lookup, the hot path); None when not (``white`` then tells a white-listed pass
        from a miss)."""
        if rules is not self._rules:
            self._entries.clear()
            self._rules = rules
            return None
        return self._entries.get(key)

    def white(self, key: Key) -> bool:
        """Whether ``key`` passed as a white-listed peer (no signature to verify); asked
        after ``get`` (which forgets the passes of older rules)."""
        return key in self._entries and self._entries[key] is None

    def put(self, rules: Rules, key: Key, account: Account | None) -> None:
        if rules is not self._rules:
            self._entries.clear()
            self._rules = rules
        if len(self._entries) >= LIMIT:
            self._entries.clear()
        self._entries[key] = account
