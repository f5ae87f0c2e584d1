"""SubscriptionGroupConfig (protocol.md 6.5): a consumer group as a broker knows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from aiorocketmq.remoting.protocol.fields import as_object, integer, text


def _bool(value: object, default: bool) -> bool:
    return default if value is None else str(value).lower() == "true"


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupConfig:
    """A consumer group's broker-side settings (SubscriptionGroupConfig)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        obj = as_object(obj, "SubscriptionGroupConfig")
        return cls(
            group_name=text(obj, "groupName"),
            consume_enable=_bool(obj.get("consumeEnable"), True),
            consume_from_min_enable=_bool(obj.get("consumeFromMinEnable"), True),
            consume_broadcast_enable=_bool(obj.get("consumeBroadcastEnable"), True),
            retry_queue_nums=integer(obj, "retryQueueNums", 1),
            retry_max_times=integer(obj, "retryMaxTimes", 16),
            broker_id=integer(obj, "brokerId", 0),
            which_broker_when_consume_slowly=integer(obj, "whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=_bool(
                obj.get("notifyConsumerIdsChangedEnable"), True
            ),
        )
