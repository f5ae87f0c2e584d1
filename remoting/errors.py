"""The RemotingError tree, and ConfigError for bad configuration.

Expected outcomes are status enums and refused requests are response codes; exceptions here are
for I/O failures, malformed bytes and bad configuration only (design.md section 6).
"""

from __future__ import annotations


class RemotingError(Exception):
    """Base of every remoting failure."""


class RemotingConnectError(RemotingError):
    """A connection could not be opened, or was lost while a request was pending."""


class RemotingTimeoutError(RemotingError, TimeoutError):
    """No response arrived within the request's timeout; the connection stays usable."""


class RemotingSendRequestError(RemotingError):
    """A request could not be written (connection closed or peer not reading)."""


class RemotingTooMuchRequestError(RemotingError):
    """Too many requests in flight: the caller's wait for a slot outlasted its timeout."""


class RemotingCommandError(RemotingError):
    """A command or header is malformed: a missing or unparsable field, an unencodable value."""


class FrameError(RemotingCommandError):
    """Bytes on the wire do not form a valid frame; the connection that sent them is closed."""


class MessageDecodeError(RemotingError):
    """Stored-message bytes (a CommitLog record, a pull body, a batch body) are malformed."""


class ConfigError(Exception):
    """Bad configuration: reported as one line, and the process exits 1."""
