"""Hot reload of the ACL files on a real broker (4.9.8's AclFileWatchService, r#4199): an edit
takes effect at the next look (every 5 s by default); a broken file keeps the last good
rules and says why once; a file added to the ACL directory is loaded, and an access key it
shares with plain_acl.yml keeps the directory's definition (4.9.8's order), with a warning."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiorocketmq.client.core import api
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.signature import Credentials
from tests.broker.acl_setup import PLAIN_ACL, USER, acl_files, client
from tests.cluster import Cluster
from tests.harness import ServerProcess
from tests.scrape import scrape, value

NEWCOMER = Credentials("newcomer01", "newSecret01")
ACCOUNT = """\
  - accessKey: newcomer01
    secretKey: newSecret01
    defaultTopicPerm: PUB
"""


async def served(addr: str, credentials: Credentials) -> bool:
    async with client(credentials) as cli:
        resp = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "TBW102", 0))
    return resp.code == ResponseCode.SUCCESS


async def until(addr: str, credentials: Credentials, want: bool, timeout: float = 30) -> None:
    """Poll until requests signed with ``credentials`` are served (or refused)."""
    async with asyncio.timeout(timeout):
        while True:
            if await served(addr, credentials) == want:
                return
            await asyncio.sleep(0.2)


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def named(proc: ServerProcess, event: str) -> list[dict[str, object]]:
    return [e for e in proc.events if e.get("event") == event]


async def checks(proc: ServerProcess) -> float:
    return value(await scrape(proc.metrics_port()), "rocketmq_acl_file_checks_total")


async def test_an_edit_of_plain_acl_yml_takes_effect_at_the_next_look(cluster: Cluster) -> None:
    """The default watch interval (5 s, Apache's): no restart, no request needed."""
    sets = acl_files(cluster.root)
    broker = cluster.add_broker("b", sets=sets)
    path = Path(sets["aclFile"])
    assert not await served(broker.addr, NEWCOMER)
    put(path, PLAIN_ACL + ACCOUNT)
    await until(broker.addr, NEWCOMER, True)
    put(path, PLAIN_ACL)
    await until(broker.addr, NEWCOMER, False)
    assert await served(broker.addr, USER)


async def test_a_broken_file_keeps_the_last_good_rules_and_says_why_once(
    cluster: Cluster,
) -> None:
    sets = {**acl_files(cluster.root), "aclFileWatchInterval": "100"}
    broker = cluster.add_broker("b", sets=sets)
    proc = broker.proc
    assert proc is not None
    path = Path(sets["aclFile"])
    put(path, PLAIN_ACL + "  - accessKey: [unclosed\n")
    failure = proc.wait_for("acl_reload_failed")
    assert str(path) in str(failure["error"])
    seen = await checks(proc)
    async with asyncio.timeout(30):  # several more looks at the same broken file
        while True:
            if await checks(proc) >= seen + 5:
                break
            await asyncio.sleep(0.1)
    assert len(named(proc, "acl_reload_failed")) == 1
    assert await served(broker.addr, USER)  # the last good rules
    put(path, PLAIN_ACL + "  - accessKey: tiny\n    secretKey: newSecret01\n")
    short = proc.wait_for("acl_reload_failed", count=2)  # a new state of the file: said again
    assert "The accessKey=tiny and secretKey=*** cannot be null" in str(short["error"])
    assert "newSecret01" not in proc.dump()
    assert await served(broker.addr, USER)
    put(path, PLAIN_ACL + ACCOUNT)
    await until(broker.addr, NEWCOMER, True)
    samples = await scrape(proc.metrics_port())
    assert value(samples, "rocketmq_acl_reload_failures_total") == 2


async def test_a_file_added_to_the_acl_directory_is_loaded_and_its_keys_come_first(
    cluster: Cluster,
) -> None:
    sets = {**acl_files(cluster.root), "aclFileWatchInterval": "100"}
    broker = cluster.add_broker("b", sets=sets)
    assert broker.proc is not None
    extra = Path(sets["aclDir"]) / "team" / "extra.yaml"
    put(extra, "accounts:\n" + ACCOUNT + "  - accessKey: userKey01\n"
                     "    secretKey: otherSecret1\n    defaultTopicPerm: PUB\n")  # fmt: skip
    put(Path(sets["aclDir"]) / "tools.yml", "accessKey: [not an ACL file\n")
    await until(broker.addr, NEWCOMER, True)
    assert not await served(broker.addr, USER)  # userKey01 is now the directory's
    assert await served(broker.addr, Credentials(USER.access_key, "otherSecret1"))
    (warning,) = [e for e in named(broker.proc, "acl_file_warning")
                  if "userKey01" in str(e["warning"])]  # fmt: skip
    assert str(extra) in str(warning["warning"])
    assert not named(broker.proc, "acl_reload_failed")  # tools.yml is never read
    await asyncio.to_thread(extra.unlink)
    await until(broker.addr, NEWCOMER, False)
    assert await served(broker.addr, USER)
