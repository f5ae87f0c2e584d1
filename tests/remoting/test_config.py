"""RocketMQ-style config files into frozen dataclasses, --set overrides, -p round trip."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.namesrv.config import NamesrvConfig
from aiorocketmq.remoting.config import (
    ClientConfig,
    ServerConfig,
    Value,
    build,
    dump,
    load_values,
    parse_properties,
    warn_unknown,
)
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.metrics_port import metrics_port
from aiorocketmq.remoting.protocol.codes import SerializeType
from tests.harness import ROOT


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    broker_ip1: str = field(default="", metadata={"key": "brokerIP1"})
    listen_port: int = 10911
    auto_create_topic_enable: bool = True
    serialize_type: SerializeType = SerializeType.MSGPACK


def test_java_properties_forms() -> None:
    """design.md 8: existing broker.conf files load: key=value, spaces, ':' and comments."""
    text = "# comment\n! also a comment\n\nbrokerIP1 = 10.0.0.1\nlistenPort:10921\n" \
           "autoCreateTopicEnable false\n  serializeType=JSON  \n"  # fmt: skip
    values = parse_properties(text, "broker.conf")
    assert {k: v.text for k, v in values.items()} == {
        "brokerIP1": "10.0.0.1", "listenPort": "10921",
        "autoCreateTopicEnable": "false", "serializeType": "JSON",
    }  # fmt: skip
    assert values["listenPort"].where == "broker.conf:5"
    cfg = build(Sample, values)
    assert cfg == Sample(
        broker_ip1="10.0.0.1",
        listen_port=10921,
        auto_create_topic_enable=False,
        serialize_type=SerializeType.JSON,
    )


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("listenPort", "ten", "broker.conf:3: listenPort: expected int, got 'ten'"),
        ("autoCreateTopicEnable", "yes", "broker.conf:3: autoCreateTopicEnable: expected true"),
        ("serializeType", "XML", "broker.conf:3: serializeType: expected JSON or ROCKETMQ or"),
    ],
)
def test_bad_values_name_file_line_and_key(key: str, text: str, message: str) -> None:
    """design.md 6: bad configuration is one line naming where, which key and what was expected
    (a bool other than true/false is an error, where Java silently reads false)."""
    with pytest.raises(ConfigError) as info:
        build(Sample, {key: Value(text, "broker.conf:3")})
    assert str(info.value).startswith(message)


def test_set_overrides_file(tmp_path: Path) -> None:
    """design.md 8: defaults < -c file < --set key=value."""
    conf = tmp_path / "server.conf"
    conf.write_text("listenPort=1000\nbindAddress=127.0.0.1\n")
    values = load_values(str(conf), ["listenPort=2000"])
    cfg = build(ServerConfig, values)
    assert (cfg.listen_port, cfg.bind_address) == (2000, "127.0.0.1")
    assert cfg.server_channel_max_idle_time_seconds == 120  # RocketMQ's default


def test_unknown_keys_are_warned_once(tmp_path: Path) -> None:
    """design.md 8: a key no config object takes is warned about once and ignored."""
    values = {"listenPort": Value("1", "f:1"), "brokerRole": Value("SLAVE", "f:2")}
    with capture_logs() as logs:
        warn_unknown(values, [ServerConfig, ClientConfig])
    assert logs == [{"event": "config_key_unknown", "key": "brokerRole", "where": "f:2",
                     "log_level": "warning"}]  # fmt: skip


def test_bad_lines_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    """design.md 6: ConfigError, one line, for unreadable files and malformed lines."""
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_values(str(tmp_path / "absent.conf"))
    with pytest.raises(ConfigError, match=r"f\.conf:2: expected key=value"):
        parse_properties("a=1\n=value\n", "f.conf")
    with pytest.raises(ConfigError, match="--set"):
        load_values(None, ["novalue"])


def test_configs_are_frozen() -> None:
    """design.md 8: config objects are frozen dataclasses, passed explicitly."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        ServerConfig().listen_port = 1  # type: ignore[misc]


def test_dump_is_sorted_and_loads_back() -> None:
    """design.md 8: -p prints sorted camelCase key=value lines that load back unchanged."""
    sample = Sample(broker_ip1="1.2.3.4", auto_create_topic_enable=False)
    text = dump(sample)
    assert text.splitlines() == ["autoCreateTopicEnable=false", "brokerIP1=1.2.3.4",
                                 "listenPort=10911", "serializeType=MSGPACK"]  # fmt: skip
    assert build(Sample, parse_properties(text, "dump")) == sample


def run_echo(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tests.remoting.echo_server", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_print_config_round_trips_through_a_process(tmp_path: Path) -> None:
    """design.md 8: `-p` prints the effective config, exits 0, and its output loads back
    through `-c` unchanged; dedicated flags beat --set."""
    first = run_echo("-p", "--set", "serverChannelMaxIdleTimeSeconds=7", "--listen-port", "1234")
    assert first.returncode == 0, first.stderr
    assert "listenPort=1234\n" in first.stdout
    assert "serverChannelMaxIdleTimeSeconds=7\n" in first.stdout
    conf = tmp_path / "printed.conf"
    conf.write_text(first.stdout)
    second = run_echo("-p", "-c", str(conf))
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


def test_bad_config_exits_1_with_one_line() -> None:
    """design.md 6: bad configuration is reported in one line and the process exits 1."""
    result = run_echo("--set", "listenPort=abc")
    assert result.returncode == 1
    assert result.stderr == ("config error: --set: listenPort: expected int, got 'abc'\n")


def test_an_unset_metrics_port_follows_the_listen_port() -> None:
    """Issue 31 item 1: metricsPort unset is listenPort + 1000 (0 for listen port 0), an
    explicit one wins (0 any free port, -1 off), and an optional key reads back empty."""
    assert metrics_port(None, 10911) == 11911 and metrics_port(None, 9876) == 10876
    assert metrics_port(None, 0) == 0
    assert [metrics_port(p, 10911) for p in (5557, 0, -1)] == [5557, 0, -1]
    with pytest.raises(
        ConfigError, match=r"listenPort 65000 \+ 1000 is past 65535: set metricsPort"
    ):
        metrics_port(None, 65000)
    unset = build(NamesrvConfig, {})
    assert unset.metrics_port is None and "metricsPort=\n" in dump(unset)
    again = build(NamesrvConfig, {"metricsPort": Value("", "dump")})
    assert again.metrics_port is None
    assert build(NamesrvConfig, {"metricsPort": Value("-1", "file")}).metrics_port == -1
    with pytest.raises(ConfigError, match="metricsPort: must be between -1 and 65535"):
        build(NamesrvConfig, {"metricsPort": Value("-2", "file")})
