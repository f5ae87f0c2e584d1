"""Request bodies for the fuzzer: the JSON and binary bodies each code takes, mutated.

Each builder returns (body, refuse): ``refuse`` says why the server should refuse the request
(a number outside the Java type of its field, a group name Apache's Validators refuse, a
black-listed config key), or None.

UPDATE_BROKER_CONFIG lines name only ``SAFE_CONFIG_KEYS`` (or unknown and black-listed
keys, which must be ignored or refused): the others would stop the run itself -- a path, the
name server address, a permission or a limit that refuses every send, a period the judges
rely on -- and are tried one by one, last, by the config probe (benchmarks/fuzz_config.py).
"""

from __future__ import annotations

import json
import random
import zlib
from typing import Final

from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from benchmarks.fuzz_values import (
    INT32,
    INT64,
    NUMBERS,
    World,
    bad_group_name,
    json_number,
    json_text,
    mutant,
    odd_string,
    out_of_range,
)

SAFE_CONFIG_KEYS: Final = (
    "accessMessageInMemoryMaxRatio", "autoCreateSubscriptionGroup", "autoCreateTopicEnable",
    "brokerTopicEnable", "clusterTopicEnable", "clientChannelExpiredTime",
    "clientChannelScanInterval", "defaultTopicQueueNums", "haHousekeepingInterval",
    "haSendHeartbeatInterval", "haSlaveFallbehindMax", "haTransferBatchSize", "longPollingEnable",
    "maxMappedConsumeQueueFiles", "messageIndexEnable", "rebalanceLockMaxLiveTime", "regionId",
    "rejectTransactionMessage", "serverChannelMaxIdleTimeSeconds", "shortPollingTimeMills",
    "slaveReadEnable", "slaveSyncInterval", "syncFlushTimeout", "traceOn",
    "transactionCheckInterval", "transactionCheckMax", "transactionTimeOut",
)  # fmt: skip
# black-listed, spelled as java.util.Properties would also read them (escapes, ':' separators)
BLACK_LISTED: Final = (
    "brokerConfigPath", "rocketmqHome", "configBlackList", "brokerConfig\\u0050ath",
    "rocketmq\\u0048ome", " brokerConfigPath", "brokerConfigPath ",
)  # fmt: skip
NS_TOPICS: Final = ("FuzzNsT", "FuzzNsT2", "%RETRY%fuzz_ns", "a" * 300, "\ud800", "", "TBW102")
JUNK: Final = (b"", b"{}", b"null", b"[", b"[]", b'"x"', b"\xff\xfe", b"{" * 5000, b"[" * 100_000,
               b'{"a":' * 3000, b"1e999999", b"\x00" * 64)  # fmt: skip


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def junk(rng: random.Random) -> bytes:
    return rng.choice(JUNK) if rng.random() < 0.8 else rng.randbytes(rng.randrange(1, 512))


def group_config(
    world: World, rng: random.Random, name: str, *, sane_numbers: bool = False
) -> tuple[bytes, str | None]:
    """A SubscriptionGroupConfig (200's body) for ``name``."""
    ints = {"retryQueueNums": 1, "retryMaxTimes": 16}  # Java int
    longs = {"brokerId": 0, "whichBrokerWhenConsumeSlowly": 1}  # Java long
    obj: dict[str, object] = {"groupName": name}
    why = bad_group_name(name)
    reasons = [why] if why else []
    for key, sane in (*ints.items(), *longs.items()):
        value = sane if sane_numbers else json_number(rng, sane)
        if key == "retryQueueNums" and not sane_numbers and rng.random() < 0.1:
            value = 2**40  # N1's number, often enough to be found in a few thousand requests
        obj[key] = value
        if out_of_range(value, INT32 if key in ints else INT64):
            reasons.append(f"{key}={value} is outside a Java {'int' if key in ints else 'long'}")
    for key in ("consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable",
                "notifyConsumerIdsChangedEnable"):  # fmt: skip
        if rng.random() < 0.5:
            obj[key] = rng.choice((True, False, "true", "x", None, 1))
    if rng.random() < 0.05:
        del obj["groupName"]
        reasons = [r for r in reasons if r != why]
    return dumps(obj), "; ".join(reasons) or None


def heartbeat(
    world: World, rng: random.Random, group: str | None = None
) -> tuple[bytes, str | None]:
    """HeartbeatData (34's body): consumers with subscriptions, producers."""
    refuse = None
    consumers = []
    for i in range(rng.choice((0, 1, 1, 2))):
        name = group if (group is not None and i == 0) else json_text(rng, rng.choice(world.groups))
        if isinstance(name, str) and (why := bad_group_name(name)):
            refuse = refuse or f"heartbeat for a group Validators refuse ({why})"
        subs = []
        for _ in range(rng.choice((0, 1, 2))):
            code_set = [json_number(rng, 116)] if rng.random() < 0.3 else []
            sub_version = json_number(rng, 1)
            subs.append({"topic": json_text(rng, rng.choice(world.topics)),
                         "subString": json_text(rng, rng.choice(("*", "t", "a||b", ""))),
                         "tagsSet": [], "codeSet": code_set, "subVersion": sub_version,
                         "expressionType": json_text(rng, "TAG"),
                         "classFilterMode": False})  # fmt: skip
        consumers.append({"groupName": name,
                          "consumeType": json_text(rng, "CONSUME_PASSIVELY"),
                          "messageModel": json_text(rng, "CLUSTERING"),
                          "consumeFromWhere": json_text(rng, "CONSUME_FROM_LAST_OFFSET"),
                          "subscriptionDataSet": subs, "unitMode": rng.random() < 0.1})  # fmt: skip
    producers = [{"groupName": json_text(rng, "fuzz_pg")} for _ in range(rng.choice((0, 1)))]
    obj = {"clientID": json_text(rng, "127.0.0.1@fuzz#1"), "consumerDataSet": consumers,
           "producerDataSet": producers}  # fmt: skip
    return dumps(obj), refuse


def lock_batch(world: World, rng: random.Random) -> bytes:
    mqs = [{"topic": json_text(rng, rng.choice(world.topics)), "brokerName": json_text(rng, "b"),
            "queueId": json_number(rng, rng.randrange(8))}
           for _ in range(rng.choice((0, 1, 3, 1000)))]  # fmt: skip
    return dumps({"consumerGroup": json_text(rng, rng.choice(world.groups)),
                  "clientId": json_text(rng, "127.0.0.1@fuzz#1"), "mqSet": mqs,
                  "onlyThisBroker": rng.choice((True, False, "x"))})  # fmt: skip


def config_lines(world: World, rng: random.Random) -> tuple[bytes, str | None]:
    """UPDATE_BROKER_CONFIG's key=value lines."""
    lines, refuse = [], None
    for _ in range(rng.choice((1, 1, 2, 4))):
        roll = rng.random()
        if roll < 0.7:
            key = rng.choice(SAFE_CONFIG_KEYS)
            kind = "bool" if key.endswith(("Enable", "On", "Message", "Group")) else "int"
            lines.append(f"{key}={mutant('str' if key == 'regionId' else kind, rng)}")
        elif roll < 0.8:
            lines.append(f"{odd_string(rng)[:64] or 'k'}={odd_string(rng)[:64]}")
        elif roll < 0.9:
            key = rng.choice(BLACK_LISTED)
            sep = rng.choice(("=", ":", " = "))
            lines.append(f"{key}{sep}{world.scratch}/evil.conf")
            refuse = refuse or f"black-listed key spelled {key!r}"
        else:
            lines.append(rng.choice(("=x", "novalue", "#c", "a\\", "k=v\\", "\x00=1", "k=\u2028x")))
    return "\n".join(lines).encode("utf-8", "surrogatepass"), refuse


_BOMB: list[bytes] = []


def bomb() -> bytes:
    """64 MiB of zeros deflated (64 KiB): a body that inflates past the frame limit."""
    if not _BOMB:
        _BOMB.append(zlib.compress(bytes(64 * 1024 * 1024), 9))
    return _BOMB[0]


def register_body(rng: random.Random, ext: dict[str, str]) -> tuple[bytes, str | None]:
    """RegisterBrokerBody for a made-up broker; the header's CRC (and compressed flag) set to
    match, usually; now and then a zlib bomb (which must be refused)."""
    if rng.random() < 0.01:
        ext["compressed"], ext["bodyCrc32"] = "true", str(zlib.crc32(bomb()) & 0x7FFFFFFF)
        return bomb(), "a compressed body that inflates to 64 MiB"
    table = {}
    for _ in range(rng.choice((0, 1, 2, 5))):
        name = rng.choice(NS_TOPICS)
        sane = {"readQueueNums": 8, "writeQueueNums": 8, "perm": 6, "topicSysFlag": 0}
        numbers = {k: json_number(rng, v) for k, v in sane.items()}
        table[name] = {"topicName": json_text(rng, name), **numbers,
                       "topicFilterType": "SINGLE_TAG", "order": False}  # fmt: skip
    # A topic beyond a Java int is no reason to refuse the registration: the name server
    # skips that topic and registers the rest (issue 29, docs/compatibility.md); the lasting
    # checks see whether the rest still route.
    version = {"counter": json_number(rng, 1), "timestamp": json_number(rng, 1700000000000)}
    body = dumps({"topicConfigSerializeWrapper": {"topicConfigTable": table,
                                                  "dataVersion": version},
                  "filterServerList": [] if rng.random() < 0.9 else [odd_string(rng)]})  # fmt: skip
    if rng.random() < 0.15:
        body = zlib.compress(body)
        ext["compressed"] = "true"
    if rng.random() < 0.8:
        ext["bodyCrc32"] = str(zlib.crc32(body) & 0x7FFFFFFF)
    return (body, None) if rng.random() < 0.9 else (junk(rng), None)


def message_body(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.005:
        return bytes(4 * 1024 * 1024 + 1)  # one byte past maxMessageSize
    if roll < 0.05:
        return b""
    return rng.randbytes(rng.choice((1, 16, 200, 1024, 8192)))


def batch_body(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return junk(rng)
    items = [BatchItem(message_body(rng)[:2048], rng.choice(NUMBERS[:12]),
                       rng.choice(("", "KEYS\x01k\x02", "DELAY\x013\x02", "\x01\x02\x01", "a")))
             for _ in range(rng.choice((0, 1, 2, 32)))]  # fmt: skip
    return encode_batch(items)


def body(
    code: int, world: World, rng: random.Random, ext: dict[str, str]
) -> tuple[bytes, str | None]:
    """The body for one request of ``code`` (``ext`` may gain the fields that describe it)."""
    if rng.random() < 0.05:
        return junk(rng), None
    if code == C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP:
        return group_config(world, rng, rng.choice((*world.groups, odd_string(rng))))
    if code == C.HEART_BEAT:
        return heartbeat(world, rng)
    if code in (C.LOCK_BATCH_MQ, C.UNLOCK_BATCH_MQ):
        return lock_batch(world, rng), None
    if code == C.UPDATE_BROKER_CONFIG:
        return config_lines(world, rng)
    if code == C.REGISTER_BROKER:
        return register_body(rng, ext)
    if code == C.QUERY_DATA_VERSION:
        return dumps({"counter": json_number(rng, 1), "timestamp": json_number(rng, 1)}), None
    if code in (C.SEND_MESSAGE, C.SEND_MESSAGE_V2):
        return message_body(rng), None
    if code == C.SEND_BATCH_MESSAGE:
        return batch_body(rng), None
    if code in (C.CONSUME_MESSAGE_DIRECTLY, C.UPDATE_AND_CREATE_TOPIC) or rng.random() < 0.1:
        return junk(rng), None
    return b"", None
