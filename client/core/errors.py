"""The SDK's errors, all MQClientError: MQConnectionError and MQTimeoutError for the
network, MQBrokerError for a broker's refusal, with ``retriable`` driving the producer's
retries (DefaultMQProducer.retryResponseCodes in 4.9.8)."""

from __future__ import annotations

from typing import Final

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


class MQBrokerError(MQClientError):
    """A broker answered ``code`` with ``remark`` (MQBrokerException)."""

    def __init__(self, code: int, remark: str | None, broker_addr: str = "") -> None:
        self.code = code
        self.remark = remark or ""
        self.broker_addr = broker_addr
        self.retriable = code in RETRIABLE_CODES
        where = f" from {broker_addr}" if broker_addr else ""
        super().__init__(f"broker error {code}{where}: {self.remark}")
