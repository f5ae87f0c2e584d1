"""ClientRegistry.find_client, pure (ProducerManager.findChannel): the channel a reply is
pushed on is the one the client's last heartbeat came on, and it is forgotten as soon as the
client is gone -- its connection closed, expired, or every group of it unregistered."""

from __future__ import annotations

from aiorocketmq.broker.registry import ClientInfo, ClientRegistry
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData


def info(client_id: str, at: float = 0.0) -> ClientInfo:
    return ClientInfo(client_id, "127.0.0.1:1", "PYTHON", 409, at)


def test_a_client_is_found_by_its_id_on_its_last_channel() -> None:
    reg = ClientRegistry()
    reg.register_producer("pg", "ch1", info("c1"))
    assert reg.find_client("c1") == "ch1"
    reg.register_producer("pg", "ch2", info("c1"))  # reconnected: the id moves
    assert reg.find_client("c1") == "ch2"
    reg.channel_closed("ch1")  # the old connection closing forgets nothing of the new one
    assert reg.find_client("c1") == "ch2"
    reg.channel_closed("ch2")
    assert reg.find_client("c1") is None


def test_a_consumer_is_found_too_and_unregistering_the_last_group_forgets_it() -> None:
    reg = ClientRegistry()
    reg.register_consumer(ConsumerData(group_name="cg"), "ch", info("c2"))
    reg.register_producer("pg", "ch", info("c2"))
    assert reg.find_client("c2") == "ch"
    reg.unregister("ch", None, "pg")  # still a consumer on that connection
    assert reg.find_client("c2") == "ch"
    reg.unregister("ch", "cg", None)
    assert reg.find_client("c2") is None


def test_an_expired_client_is_forgotten() -> None:
    reg = ClientRegistry(expire_seconds=10)
    reg.register_producer("pg", "old", info("c3", at=0.0))
    reg.register_producer("pg", "new", info("c4", at=100.0))
    stale, _groups = reg.expire(105.0)
    assert stale == ["old"]
    assert (reg.find_client("c3"), reg.find_client("c4")) == (None, "new")
