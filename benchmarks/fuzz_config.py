"""The config probe: UPDATE_BROKER_CONFIG with the keys the fuzzing leaves alone, one by one.

These keys would stop the run itself (a path, the name server address, the broker's identity
or role, a limit that refuses every send, a period the judges rely on), so the fuzzer never
sends them; here each is sent alone, last, with a hostile value, and whatever the broker
accepted is put back to its running value at once (so the next key is judged alone). Issue
29 item 4 says which must be refused: paths, ``namesrvAddr``, role keys, any key naming a
file or a process, and out-of-range values (``maxMessageSize`` < 1 KiB); those accepted are
findings. Finally the three keys of the issue's N4 are accepted for real (if they are), the
broker restarted, and judged: an outage there is what a caller can cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from benchmarks.fuzz_checks import Verdict
from benchmarks.fuzz_verify import Cluster

# key -> (value to try, why it must be refused or None if it is only worth noting)
MUST_REFUSE: Final = "names a file, a process, the cluster's wiring or a role"
PROBES: Final[dict[str, tuple[str, str | None]]] = {
    "storePathRootDir": ("{scratch}/elsewhere", MUST_REFUSE),
    "storePathCommitLog": ("{scratch}/elsewhere/commitlog", MUST_REFUSE),
    "namesrvAddr": ("127.0.0.1:1", MUST_REFUSE),
    "listenPort": ("1", MUST_REFUSE),
    "bindAddress": ("10.255.255.1", MUST_REFUSE),
    "brokerName": ("renamed_broker", MUST_REFUSE),
    "brokerClusterName": ("OtherCluster", MUST_REFUSE),
    "brokerIP1": ("10.255.255.1", MUST_REFUSE),
    "brokerIP2": ("10.255.255.1", MUST_REFUSE),
    "brokerId": ("1", MUST_REFUSE),
    "brokerRole": ("SLAVE", MUST_REFUSE),
    "haMasterAddress": ("127.0.0.1:1", MUST_REFUSE),
    "haListenPort": ("1", MUST_REFUSE),
    "metricsPort": ("1", MUST_REFUSE),
    "maxMessageSize": ("1", "maxMessageSize below 1 KiB refuses every send"),
    "frameMaxLength": ("1024", None),
    "mappedFileSizeCommitLog": ("4096", "a segment size that differs from the store's files"),
    "mappedFileSizeConsumeQueue": ("20", "a segment size that differs from the store's files"),
    "maxHashSlotNum": ("1", None),
    "maxIndexNum": ("1", None),
    "messageDelayLevel": ("1x", "a delay level list that does not parse"),
    "registerNameServerPeriod": ("999999999", None),
    "registerBrokerTimeoutMills": ("1", None),
    "startAcceptSendRequestTimeStamp": ("9999999999999", None),
    "brokerPermission": ("0", None),
    "diskMaxUsedSpaceRatio": ("0", None),
    "diskSpaceWarningLevelRatio": ("0", None),
    "diskSpaceFreeFloorMb": ("999999999", None),
    "fileReservedTime": ("0", None),
    "deleteWhen": ("x", None),
    "flushDiskType": ("SYNC_FLUSH", None),
    "flushIntervalCommitLog": ("1", None),
    "flushIntervalConsumeQueue": ("1", None),
    "flushConsumerOffsetInterval": ("1", None),
    "flushDelayOffsetInterval": ("1", None),
    "cleanResourceInterval": ("1", None),
    "sendMessageMaxInFlight": ("1", None),
    "waitTimeMillsInSendQueue": ("1", None),
    "serverConnectionMaxInFlight": ("1", None),
    "serverWriteStallTimeoutMillis": ("1", None),
    "maxTransferCountOnMessageInMemory": ("0", None),
    "maxTransferCountOnMessageInDisk": ("0", None),
    "maxTransferBytesOnMessageInMemory": ("0", None),
    "maxTransferBytesOnMessageInDisk": ("0", None),
}
N4_KEYS: Final = ("storePathRootDir", "storePathCommitLog", "namesrvAddr")


@dataclass
class Probe:
    key: str
    value: str
    code: int
    remark: str | None
    must_refuse: str | None

    @property
    def accepted(self) -> bool:
        return self.code == 0 and "ignored" not in (self.remark or "")


async def _update(c: Cluster, text: str) -> RemotingCommand:
    req = RemotingCommand.request(C.UPDATE_BROKER_CONFIG, body=text.encode())
    return await c.judge.call(c.broker.addr, req)


async def running_values(c: Cluster) -> dict[str, str]:
    resp = await c.judge.call(c.broker.addr, RemotingCommand.request(C.GET_BROKER_CONFIG))
    out = {}
    for line in resp.body.decode().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


async def probe(c: Cluster, scratch: Path, acked: int | None) -> tuple[list[Probe], Verdict | None]:
    """Each key alone (put back when accepted); then N4's keys for real, a restart, a verdict
    (None when none of them was accepted)."""
    before = await running_values(c)
    probes = []
    for key, (value, why) in PROBES.items():
        value = value.format(scratch=scratch)
        resp = await _update(c, f"{key}={value}")
        probes.append(Probe(key, value, resp.code, resp.remark, why))
        if resp.code == 0 and key in before:
            await _update(c, f"{key}={before[key]}")
    taken = [p for p in probes if p.key in N4_KEYS and p.accepted]
    if not taken:
        return probes, None
    resp = await _update(c, "\n".join(f"{p.key}={p.value}" for p in taken))
    if resp.code != 0:
        return probes, None
    try:
        await c.restart(crash=False)
        await c.judge.setup()  # the judges' topics and groups, in whatever store it now has
    except (RuntimeError, AssertionError, RemotingError) as exc:
        v = Verdict()
        v.notes.append(f"broker did not restart and serve: {str(exc)[:200]}")
        return probes, v
    return probes, await c.judge.verdict(acked)
