"""The controller's etcd access from the broker's keys (broker/controller/access.py): every file
read at load, anything missing or not fitting a ConfigError naming its key; the password in no
repr or message; the broker refusing to start on it (one line, exit 1)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.controller.access import access_from_config, load_access
from aiorocketmq.broker.controller.controller import Controller
from aiorocketmq.remoting.errors import ConfigError
from tests.harness import ROOT
from tests.tls_certs import CA

SECRET = "s3cret-etcd-pw"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    ca = CA(tmp_path, "etcd")
    pair = ca.issue("broker", client=True)
    pw = tmp_path / "pw"
    pw.write_text(SECRET + "\n")
    return {"ca": str(ca.path), "cert": str(pair.cert), "key": str(pair.key), "pw": str(pw)}


def config(**keys: Any) -> BrokerConfig:
    return dataclasses.replace(
        BrokerConfig(enable_controller_mode=True, controller_addr="127.0.0.1:2379"), **keys
    )


def test_the_files_are_read_and_the_password_is_never_shown(files: dict[str, str]) -> None:
    access = access_from_config(
        config(
            controller_tls_enable=True,
            controller_tls_trust_cert_path=files["ca"],
            controller_tls_cert_path=files["cert"],
            controller_tls_key_path=files["key"],
            controller_username="broker",
            controller_password_file=files["pw"],
        )
    )
    assert access.password == SECRET  # the file's line, its newline dropped
    assert access.ca == Path(files["ca"]).read_bytes() and access.tls
    assert SECRET not in repr(access) and SECRET not in access.describe()
    assert access.describe() == "TLS, a client certificate, user 'broker'"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"controller_tls_enable": True, "controller_tls_trust_cert_path": "/nonexistent/ca"},
         "controllerTlsTrustCertPath: cannot read /nonexistent/ca: No such file or directory"),
        ({"controller_tls_trust_cert_path": "CA"},
         "controllerTlsTrustCertPath is set but controllerTlsEnable is not true"),
        ({"controller_tls_enable": True, "controller_tls_cert_path": "CERT"},
         "controllerTlsCertPath needs controllerTlsKeyPath"),
        ({"controller_username": "broker"}, "controllerUsername needs controllerPasswordFile"),
        ({"controller_password_file": "PW"}, "controllerPasswordFile needs controllerUsername"),
        ({"controller_username": "broker", "controller_password_file": "EMPTY"},
         "controllerPasswordFile: EMPTY is empty"),
        ({"controller_tls_enable": True, "controller_tls_cert_path": "CERT",
          "controller_tls_key_path": "ENCRYPTED"}, "controllerTlsKeyPath: ENCRYPTED is encrypted"),
    ],
)  # fmt: skip
def test_what_does_not_fit_is_a_config_error_naming_its_key(
    tmp_path: Path, files: dict[str, str], keys: dict[str, object], message: str
) -> None:
    ca = CA(tmp_path, "enc")
    encrypted = ca.issue("enc", client=True, password="kp")
    (tmp_path / "empty").write_text("\n")
    names = {"CA": files["ca"], "CERT": files["cert"], "PW": files["pw"],
             "EMPTY": str(tmp_path / "empty"), "ENCRYPTED": str(encrypted.key)}  # fmt: skip
    keys = {k: names.get(v, v) if isinstance(v, str) else v for k, v in keys.items()}
    for placeholder, path in names.items():
        message = message.replace(f": {placeholder} ", f": {path} ")
    with pytest.raises(ConfigError) as caught:
        access_from_config(config(**keys))
    assert str(caught.value).startswith(message), str(caught.value)
    with pytest.raises(ConfigError):  # the controller is never made from it either
        Controller.from_config(config(**keys), "127.0.0.1:10911")


def test_a_wrong_password_file_stops_the_broker_at_start(tmp_path: Path) -> None:
    """Checked with the other files the broker reads at start (-p prints nothing)."""
    done = subprocess.run(
        [sys.executable, "-m", "aiorocketmq.broker", "-p",
         "--set", "enableControllerMode=true", "--set", "controllerAddr=127.0.0.1:2379",
         "--set", "controllerUsername=broker",
         "--set", f"controllerPasswordFile={tmp_path / 'missing'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "controllerPasswordFile: cannot read" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_load_access_names_the_flags_it_is_given() -> None:
    """mqadmin passes its own flag names: its messages name them."""
    names = {"tls": "--etcd-tls", "ca": "--etcd-ca", "cert": "--etcd-cert", "key": "--etcd-key",
             "username": "--etcd-user", "password": "--etcd-password-file"}  # fmt: skip
    with pytest.raises(ConfigError, match=r"^--etcd-user needs --etcd-password-file"):
        load_access(username="root", names=names)
