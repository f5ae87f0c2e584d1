"""The exactly-once sink's check-back answerer: a process on the driver holding a
``TransactionProducer`` of a write's producer group, so a broker asking about a half message
left pending (CHECK_TRANSACTION_STATE goes to a live producer of the half's PGROUP) gets an
answer from the write's commit log (spark/sink_txlog.py ``TxLog.decide``).

Why a process of its own: Spark runs a sink's driver-side ``commit``/``abort`` in a fresh
Python process per micro-batch or job (spark-connector.md §4), and no Python process of the
driver lives as long as the query. So every ``commit``/``abort`` (and a stream's writer, when
the query starts) calls ``ensure``, which starts one unless one holds the log directory's
lock (its pid is written there). It runs until the driver's JVM is gone, or nothing happened
for ``IDLE_SECONDS`` (no check-back, no new record; the next commit starts another). Its
output goes to ``<log dir>/answerer.log``.

It also finishes a commit whose committer died after writing the batch's record but before
sending every END (spark/sink_txlog.py): check-backs about those halves are answered UNKNOWN
meanwhile, so the queue order holds.

Only the driver's processes are producers of the group: the executors send the halves with a
producer of the sink's ``producerGroup`` (``half_message`` names the other group), so a
check-back never goes to a process that cannot read the log.

Run as ``python -m aiorocketmq.spark.sink_answerer`` with its settings pickled on stdin
(they hold the account's secret: never on the command line).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import pickle
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from aiorocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    TransactionProducer,
)
from aiorocketmq.spark.access import Access
from aiorocketmq.spark.sink_ends import end_halves
from aiorocketmq.spark.sink_txlog import (
    BATCH_PROPERTY,
    QUERY_PROPERTY,
    WRITER_PROPERTY,
    Decision,
    Place,
    TxLog,
    alive,
)

log = logging.getLogger(__name__)

IDLE_SECONDS = 600.0
UNIQ_KEY = "UNIQ_KEY"  # MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: a half's msgId
POLL_SECONDS = 0.5
FINISH_EVERY_S = 5.0  # how often the log is scanned for commits left half done
REPORT_EVERY_S = 10.0  # at most one line of check-back totals this often
LOCK = "answerer.lock"
_STATES = {
    Decision.COMMIT: LocalTransactionState.COMMIT_MESSAGE,
    Decision.ROLLBACK: LocalTransactionState.ROLLBACK_MESSAGE,
    Decision.UNKNOWN: LocalTransactionState.UNKNOW,
}


@dataclass(frozen=True)
class Settings:
    place: Place
    name_server: str
    access: Access
    send_timeout_ms: int
    watch_pid: int  # the driver's JVM: the answerer ends with it
    idle_seconds: float = IDLE_SECONDS


class Answers:
    """The listener: a check-back's answer from the log (the query, batch and task attempt
    are the half's properties); a half of another query, or without them, is UNKNOWN."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self._logs: dict[str, TxLog] = {}
        self.last = time.monotonic()  # the last check-back
        self.answered: dict[Decision, int] = dict.fromkeys(Decision, 0)

    def decide(self, props: dict[str, str]) -> Decision:
        self.last = time.monotonic()
        query, batch, writer = (props.get(p) for p in (QUERY_PROPERTY, BATCH_PROPERTY,
                                                       WRITER_PROPERTY))  # fmt: skip
        msg_id = props.get(UNIQ_KEY, "")
        if not query or not writer or not batch or not batch.isdigit() or "/" in query:
            return Decision.UNKNOWN
        txlog = self._logs.get(query)
        if txlog is None:
            txlog = self._logs[query] = TxLog(self.log_dir, query)
        decision = txlog.decide(int(batch), writer, msg_id)
        self.answered[decision] += 1
        return decision

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW  # never called: this producer sends nothing

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        decision = self.decide(dict(msg.properties))
        log.debug("check_back msg_id=%s batch=%s writer=%s -> %s", msg.msg_id,
                  msg.properties.get(BATCH_PROPERTY), msg.properties.get(WRITER_PROPERTY),
                  decision.value)  # fmt: skip
        return _STATES[decision]

    def summary(self) -> dict[str, int]:
        return {d.value: n for d, n in self.answered.items()}


# ------------------------------------------------------------------ starting one


def driver_pid() -> int:
    """The driver's JVM: the nearest ``java`` among this process's ancestors (a driver-side
    Python worker is the JVM's child or grandchild); else (no /proc, or a writer made
    outside Spark) this process."""
    pid = os.getpid()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name == "java":
            return pid
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
    return os.getpid()


def running(log_dir: str) -> bool:
    """Whether an answerer holds the log directory's lock."""
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    fd = os.open(Path(log_dir) / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken
    return False


# a go-between, waited for, starts the answerer and exits: the answerer is nobody's child
# (no zombie, no Popen left to warn "still running" in the process that asked for it)
_LAUNCH = """
import subprocess, sys
data = sys.stdin.buffer.read()
proc = subprocess.Popen([sys.executable, "-m", "aiorocketmq.spark.sink_answerer"],
                        stdin=subprocess.PIPE, start_new_session=True, close_fds=True)
proc.stdin.write(data)
proc.stdin.close()
"""


def ensure(settings: Settings) -> None:
    """Start the answerer of ``settings.place`` unless one runs."""
    log_dir = settings.place.log_dir
    if running(log_dir):
        return
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # what imported us
    with (Path(log_dir) / "answerer.log").open("ab") as out:
        subprocess.run(
            [sys.executable, "-c", _LAUNCH], input=pickle.dumps(settings), stdout=out,
            stderr=subprocess.STDOUT, env=env, check=True, timeout=60,
        )  # fmt: skip


# ------------------------------------------------------------------ the process


async def finish_orphans(
    tx: TransactionProducer, log_dir: str, skip: set[tuple[str, int]] | None = None
) -> int:
    """Each record whose committer died before sending all its ENDs: its halves committed
    now, in row order, as the committer would have (then ``.done``); how many. A record
    that cannot be read is logged once and left (in ``skip``)."""
    skip = set() if skip is None else skip
    finished = 0
    with contextlib.suppress(FileNotFoundError):
        queries = [entry.name for entry in os.scandir(log_dir) if entry.is_dir()]
        for query in queries:
            txlog = TxLog(log_dir, query)
            for batch in txlog.unfinished():
                if (query, batch) in skip:
                    continue
                try:
                    record = txlog.read(batch)
                    if record is None or alive(record.committer):
                        continue
                    log.info("finishing_commit query=%s batch=%d halves=%d (its committer "
                             "died)", query, batch, len(record.halves))  # fmt: skip
                    ends = [(list(record.halves), LocalTransactionState.COMMIT_MESSAGE)]
                    failed = await end_halves(tx, ends, per_half=record.per_half())
                    txlog.finished(batch, [h[5] for h in failed])
                    finished += 1
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    log.warning("unreadable_record query=%s batch=%d error=%r", query, batch, exc)
                    skip.add((query, batch))
    return finished


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is gone
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    return True


def _log_changed(log_dir: str) -> float:
    """The newest modification time under the log directory (its queries' folders)."""
    newest = 0.0
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(log_dir):
            if entry.is_dir():
                newest = max(newest, entry.stat().st_mtime)
    return newest


async def serve(settings: Settings) -> str:
    """Answer check-backs until the driver is gone or idle; why it stopped."""
    place = settings.place
    answers = Answers(place.log_dir)
    producer = TransactionProducer(
        place.group, answers, settings.name_server,
        send_msg_timeout=settings.send_timeout_ms, **settings.access.keywords(),
    )  # fmt: skip
    await producer.start()
    log.info("answerer_started group=%s log=%s driver_pid=%d", place.group, place.log_dir,
             settings.watch_pid)  # fmt: skip
    changed, seen_at = _log_changed(place.log_dir), time.monotonic()
    reported = answers.summary()
    finish_at = report_at = 0.0
    unreadable: set[tuple[str, int]] = set()
    try:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            if time.monotonic() >= finish_at:
                finish_at = time.monotonic() + FINISH_EVERY_S
                await finish_orphans(producer, place.log_dir, unreadable)
            if answers.summary() != reported and time.monotonic() >= report_at:
                reported, report_at = answers.summary(), time.monotonic() + REPORT_EVERY_S
                log.info("check_backs_answered group=%s %s", place.group, reported)
            if not _alive(settings.watch_pid):
                return "the driver is gone"
            now = _log_changed(place.log_dir)
            if now != changed:
                changed, seen_at = now, time.monotonic()
            if time.monotonic() - max(seen_at, answers.last) > settings.idle_seconds:
                return "idle"
    finally:
        await producer.shutdown()
        log.info("answerer_stopped group=%s answered=%s", place.group, answers.summary())


def main() -> int:
    settings = pickle.loads(sys.stdin.buffer.read())
    assert isinstance(settings, Settings)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    fd = os.open(Path(settings.place.log_dir) / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another one started first
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())  # who answers (for operators and tests)
    why = asyncio.run(serve(settings))
    log.info("answerer_exit reason=%s", why)
    return 0


if __name__ == "__main__":  # run as __main__: Settings unpickles as the module's own class
    from aiorocketmq.spark.sink_answerer import main as main_of_module

    sys.exit(main_of_module())
