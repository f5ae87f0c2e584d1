"""The SDK's errors, all MQClientError: MQConnectionError and MQTimeoutError for the
network (MQRequestTimeoutError: a request's reply that never came), MQBrokerError for a
broker's refusal, with ``retriable`` driving the producer's retries
(DefaultMQProducer.retryResponseCodes in 4.9.8)."""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    RemotingTooMuchRequestError,
)
from aiorocketmq.remoting.protocol.codes import ResponseCode as R

# DefaultMQProducer.retryResponseCodes: another broker (or a later try) may take the message
RETRIABLE_CODES: Final = frozenset(
    {
        R.TOPIC_NOT_EXIST,
        R.SERVICE_NOT_AVAILABLE,
        R.SYSTEM_ERROR,
        R.NO_PERMISSION,
        R.NO_BUYER_ID,
        R.NOT_IN_CURRENT_UNIT,
    }
)


class MQClientError(Exception):
    """The root of every error the SDK raises (MQClientException): bad input, no route, a
    refusal, a lost connection, a timeout; ``retriable`` when trying again may succeed."""

    retriable: bool = False


class MQConnectionError(MQClientError):
    """No connection to a name server or broker could be made or kept (RemotingConnectException,
    RemotingSendRequestException); another try, or another broker, may succeed."""

    retriable = True


class MQTimeoutError(MQClientError, TimeoutError):
    """No answer within the call's timeout (RemotingTimeoutException); also a TimeoutError."""

    retriable = True


class MQRequestTimeoutError(MQTimeoutError):
    """``Producer.request`` sent its request but no reply came within its timeout
    (RequestTimeoutException, ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION 10006); ``topic`` and
    ``correlation_id`` name the request. Also a TimeoutError."""

    def __init__(self, text: str, topic: str, correlation_id: str) -> None:
        super().__init__(text)
        self.topic = topic
        self.correlation_id = correlation_id


class MQBrokerError(MQClientError):
    """A broker answered ``code`` with ``remark`` (MQBrokerException)."""

    def __init__(self, code: int, remark: str | None, broker_addr: str = "") -> None:
        self.code = code
        self.remark = remark or ""
        self.broker_addr = broker_addr
        self.retriable = code in RETRIABLE_CODES
        where = f" from {broker_addr}" if broker_addr else ""
        super().__init__(f"broker error {code}{where}: {self.remark}")


def translate(exc: RemotingError, addr: str) -> MQClientError:
    """The SDK's error for a remoting failure of a call to ``addr``, ``exc`` its cause:
    MQTimeoutError for no answer in time or no free request slot (RemotingTimeoutException,
    RemotingTooMuchRequestException), MQConnectionError for a connection that could not be
    made or kept (RemotingConnectException, RemotingSendRequestException), else a plain
    MQClientError, not retriable (a malformed answer)."""
    text = f"{addr}: {exc}" if addr else str(exc)
    err: MQClientError
    if isinstance(exc, RemotingTimeoutError | RemotingTooMuchRequestError):
        err = MQTimeoutError(text)
    elif isinstance(exc, RemotingConnectError | RemotingSendRequestError):
        err = MQConnectionError(text)
    else:
        err = MQClientError(text)
    # `raise ... from exc`'s effect, set here: a mypyc-compiled coroutine's `raise X from Y`
    # leaves __cause__ unset (the caller, api.Remote, is compiled)
    err.__cause__ = exc
    return err


def like(cause: BaseException | None, text: str, *, timed_out: bool = False) -> MQClientError:
    """An error saying ``text``, ``cause`` its cause, of ``cause``'s kind: a call that gave up
    after several tries fails as its last try did, MQTimeoutError or MQConnectionError, else
    MQClientError; MQTimeoutError whenever ``timed_out`` (its time budget ran out)."""
    err: MQClientError
    if timed_out or isinstance(cause, MQTimeoutError):
        err = MQTimeoutError(text)
    elif isinstance(cause, MQConnectionError):
        err = MQConnectionError(text)
    else:
        err = MQClientError(text)
    err.__cause__ = cause  # as in translate: set here for the compiled callers
    return err
