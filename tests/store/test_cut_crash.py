"""A crash in the middle of a cut (``truncate_to``, cutmark.py): a real process SIGKILLed at
each step of the cut -- before the checkpoint is lowered, before any byte is zeroed, with the
cut segment zeroed but the later ones still there, with one of them deleted, before the epoch
file is cut, before the mark goes -- restarts into exactly the cut store (the master's prefix,
queues and index included, epoch entries past the cut gone, no mark left), and a copy from
the master afterwards is byte-identical."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aiorocketmq.broker.store import cutmark
from aiorocketmq.broker.store.epochs import EpochEntry
from tests.harness import ROOT
from tests.store.conftest import StoreFactory
from tests.store.replication import SEGMENT, Filled, assert_same, boundaries, copy, fill
from tests.store.replication import replica_config as config
from tests.store.test_replica_truncate import assert_prefix

STEPS = {  # os call, file name part, which call: the step the process is killed before
    "mark_written": ("replace", "checkpoint", 1),
    "checkpoint_lowered": ("posix_fallocate", "*", 1),
    "cut_segment_zeroed": ("unlink", "0000", 1),
    "one_segment_deleted": ("unlink", "0000", 2),
    "log_cut": ("replace", "epochFileCheckpoint", 1),
    "epochs_cut": ("unlink", cutmark.FILE_NAME, 1),
}


def killed_in_cut(root: Path, cut: int, step: str) -> None:
    """Run the cut in a child process, stopped at ``step``, then SIGKILL it there."""
    call, name, nth = STEPS[step]
    argv = [sys.executable, "-m", "tests.store.cut_crasher", str(root), str(cut), call, name]
    proc = subprocess.Popen([*argv, str(nth)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    try:
        _pid, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), (status, proc.stdout.read() if proc.stdout else b"")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("step", list(STEPS))
async def test_a_cut_killed_midway_finishes_at_the_next_start(
    open_store: StoreFactory, tmp_path: Path, step: str
) -> None:
    """cutmark.py: whichever step a SIGKILL interrupts, the next start ends the log at the
    cut, with the master's queues and index before it and nothing after it."""
    master = await open_store(tmp_path / "m", **config())
    filled = await fill(master, 1_500, seed=61)
    slave = await open_store(tmp_path / "s", **config())
    rng = random.Random(62)
    await copy(master, slave, rng)
    fork = slave.max_phys_offset
    slave.epochs.append(EpochEntry(1, 0))
    slave.epochs.append(EpochEntry(2, fork))  # promoted here, then wrote on its own
    await fill(slave, 600, seed=63, prefix="slave-")  # several segments past the fork
    assert slave.max_phys_offset > fork + 3 * SEGMENT
    # the cut: a record in the middle of the shared log, so the epoch 2 entry goes too
    cut = sorted(b for b in boundaries(master) if fork // 2 < b < fork and b % SEGMENT)[0]
    await slave.shutdown()
    killed_in_cut(tmp_path / "s", cut, step)
    assert cutmark.read(tmp_path / "s") == cut  # the kill left the cut unfinished
    slave = await open_store(tmp_path / "s", **config())
    assert cutmark.read(tmp_path / "s") is None
    assert slave.epochs.entries == [EpochEntry(1, 0)]
    assert_prefix(master, slave, cut)
    await slave.abandon()  # and once more, as after a crash: the cut store is what stays
    slave = await open_store(tmp_path / "s", **config())
    assert_prefix(master, slave, cut)
    await copy(master, slave, rng)
    assert_same(master, slave, Filled(filled.keys))
