"""Health checks of the compose services (deploy/docker-compose.yml's ``healthcheck``): a
service is healthy when it does its job, not when its process runs.

    python3 -m aiorocketmq.deploy.health namesrv HOST:PORT
    python3 -m aiorocketmq.deploy.health broker CONF [-n NAMESRV]

- ``namesrv``: the name server at HOST:PORT answers GET_BROKER_CLUSTER_INFO.
- ``broker``: the broker conf file CONF names (``brokerName``, ``brokerId``) is registered
  with the name server (``-n``, else the conf's ``namesrvAddr``, else ``NAMESRV_ADDR``: the
  broker's own order, broker/__main__.py), and the broker at the address registered for it
  answers GET_BROKER_CONFIG as that broker. A broker that runs but did not register (a wrong
  name server, a refused registration) is unhealthy; so is a registration the name server
  still holds for a broker that is gone (it keeps one for up to 120 s). A conf file with
  ``innerClientAuthenticationCredentials`` (a broker with ACL on) gives the account the
  checks sign with, as the broker signs its own requests.
- ``broker`` with ``enableControllerMode=true`` (deploy/docker-compose.failover.yml): a replica
  is registered under its own brokerId while it is a slave, as brokerId 0 while it is the
  master, and not at all while fenced (no master elected yet, or cut from etcd). So: its own
  brokerId, as above; else the group's brokerId 0 at an address on this conf's
  ``listenPort`` (every replica of a compose project has its own), answering as brokerId 0;
  else unhealthy.

Prints one line saying what it found, which ``docker inspect`` shows; exits 0 when healthy,
1 when not. Each request is bounded by ``--timeout`` (default 3 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from aiorocketmq.client import MQClientError, api
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.route import ClusterInfo


class Unhealthy(Exception):
    """What is missing, on one line."""


def properties(text: str) -> dict[str, str]:
    """``key=value`` lines (a conf file, GET_BROKER_CONFIG's body); comments skipped."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith(("#", "!")):
            values[key.strip()] = value.strip()
    return values


async def call(remote: api.Remote, addr: str, code: int, timeout: float) -> bytes:
    """Request ``code`` (no header) to ``addr``; its body, or Unhealthy saying why not."""
    try:
        resp = await remote.invoke(addr, api.request(code), timeout)
    except MQClientError as exc:
        raise Unhealthy(str(exc)) from None
    if resp.code != 0:
        raise Unhealthy(f"{addr} answered {C(code).name} with code {resp.code}: {resp.remark}")
    return resp.body


async def check_namesrv(remote: api.Remote, addr: str, timeout: float) -> str:
    info = ClusterInfo.decode(await call(remote, addr, C.GET_BROKER_CLUSTER_INFO, timeout))
    return f"name server {addr} answers ({len(info.broker_addr_table)} broker groups registered)"


async def registered_addr(
    remote: api.Remote, namesrvs: list[str], name: str, broker_id: int, timeout: float
) -> str:
    """The address the first name server that answers holds for broker ``name``/``broker_id``."""
    failures = []
    for namesrv in namesrvs:
        try:
            body = await call(remote, namesrv, C.GET_BROKER_CLUSTER_INFO, timeout)
        except Unhealthy as exc:
            failures.append(str(exc))
            continue
        group = ClusterInfo.decode(body).broker_addr_table.get(name)
        addr = group.broker_addrs.get(broker_id) if group else None
        if addr is None:
            raise Unhealthy(f"{name} (brokerId {broker_id}) is not registered with {namesrv}")
        return addr
    raise Unhealthy("no name server answers: " + "; ".join(failures))


async def check_broker(
    remote: api.Remote, values: dict[str, str], namesrv: str | None, timeout: float
) -> str:
    """``values``: the broker's conf file."""
    name, broker_id = values.get("brokerName", ""), int(values.get("brokerId", "0"))
    if not name:
        raise Unhealthy("the conf file has no brokerName")
    namesrv = namesrv or values.get("namesrvAddr") or os.environ.get("NAMESRV_ADDR", "")
    namesrvs = [a.strip() for a in namesrv.split(";") if a.strip()]
    if not namesrvs:
        raise Unhealthy("no name server: give -n, namesrvAddr in the conf, or NAMESRV_ADDR")
    if values.get("enableControllerMode", "").lower() == "true":
        return await check_replica(remote, values, namesrvs, timeout)
    addr = await registered_addr(remote, namesrvs, name, broker_id, timeout)
    await answers_as(remote, addr, name, broker_id, timeout)
    return f"{name} (brokerId {broker_id}) is registered at {addr} and answers there"


async def answers_as(
    remote: api.Remote, addr: str, name: str, broker_id: int, timeout: float
) -> dict[str, str]:
    """The config of the broker at ``addr``, which must be ``name`` / ``broker_id``."""
    config = properties((await call(remote, addr, C.GET_BROKER_CONFIG, timeout)).decode())
    answered = (config.get("brokerName"), config.get("brokerId"))
    if answered != (name, str(broker_id)):
        raise Unhealthy(
            f"{name} (brokerId {broker_id}) is registered at {addr}, but the broker there is "
            f"{answered[0]} (brokerId {answered[1]})"
        )
    return config


async def check_replica(
    remote: api.Remote, values: dict[str, str], namesrvs: list[str], timeout: float
) -> str:
    """A controller-mode replica: registered as a slave under its own brokerId, or as the
    master (brokerId 0) at an address on its listenPort."""
    name, broker_id = values["brokerName"], int(values.get("brokerId", "0"))
    try:
        addr = await registered_addr(remote, namesrvs, name, broker_id, timeout)
    except Unhealthy as exc:
        not_slave = str(exc)
    else:
        await answers_as(remote, addr, name, broker_id, timeout)
        return f"{name} replica {broker_id} is a slave, registered at {addr}, answering there"
    try:
        addr = await registered_addr(remote, namesrvs, name, 0, timeout)
    except Unhealthy:
        raise Unhealthy(f"{not_slave} (controller mode: nor as master, brokerId 0; fenced "
                        "until etcd has elected a master)") from None  # fmt: skip
    port = values.get("listenPort", "")
    if addr.rpartition(":")[2] != port:
        raise Unhealthy(f"{not_slave}; the master of {name}, at {addr}, is another replica "
                        f"(this one listens on {port})")  # fmt: skip
    await answers_as(remote, addr, name, 0, timeout)
    return f"{name} replica {broker_id} is the master, registered at {addr}, answering there"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m aiorocketmq.deploy.health", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per request")
    kinds = parser.add_subparsers(dest="kind", required=True)
    namesrv = kinds.add_parser("namesrv", help="the name server answers")
    namesrv.add_argument("addr", help="host:port")
    broker = kinds.add_parser("broker", help="the broker is registered and answers")
    broker.add_argument("conf", type=Path, help="the broker's conf file")
    broker.add_argument("-n", "--namesrv-addr", help="name servers (host:port;host:port)")
    return parser.parse_args(argv)


def account(conf: dict[str, str]) -> tuple[str | None, str | None]:
    """The conf file's innerClientAuthenticationCredentials (JSON accessKey, secretKey)."""
    text = conf.get("innerClientAuthenticationCredentials", "").strip()
    if not text:
        return None, None
    try:
        inner = json.loads(text)
        return str(inner["accessKey"]), str(inner["secretKey"])
    except (ValueError, KeyError, TypeError):
        raise Unhealthy(
            "innerClientAuthenticationCredentials is not JSON {accessKey, secretKey}"
        ) from None


async def check(args: argparse.Namespace, conf: dict[str, str]) -> str:
    access_key, secret_key = account(conf)
    remote = api.Remote.open(access_key=access_key, secret_key=secret_key)
    try:
        if args.kind == "namesrv":
            return await check_namesrv(remote, args.addr, args.timeout)
        return await check_broker(remote, conf, args.namesrv_addr, args.timeout)
    finally:
        await remote.close()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        conf = properties(args.conf.read_text()) if args.kind == "broker" else {}
        print("healthy: " + asyncio.run(check(args, conf)), flush=True)
    except (Unhealthy, OSError) as exc:  # OSError: an unreadable conf file
        print(f"unhealthy: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
