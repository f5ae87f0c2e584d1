"""The exactly-once sink's commit log: which task attempts' half messages a batch committed
(spark/sink_exactly_once.py). Files only, no network.

Why a log of our own: Spark calls a streaming sink's ``commit(messages, batchId)`` *before*
it writes ``<checkpoint>/commits/<batchId>`` (spark-connector.md §5), so a driver killed
between the two re-runs the batch with the same id on restart, and ``commits/`` cannot say
whether the first run's halves were committed. The driver therefore writes the decision here
-- atomically, the first commit of a batch id winning -- *before* it sends a single
END_TRANSACTION, and everything else follows from the file:

- a re-run of a batch whose record exists rolls its own halves back and commits the
  recorded ones again (END is idempotent on the broker);
- a check-back (CHECK_TRANSACTION_STATE) about a half is answered from the record of its
  batch: ROLLBACK when its task attempt (``writer``) is not listed (a failed or killed
  task, an earlier run of the batch); when listed, UNKNOWN until the record's ENDs were all
  sent (``.done``), then COMMIT if its END failed (``.done`` lists those), else ROLLBACK
  (the END took: the check is about a stale copy); ROLLBACK when a later batch has a record
  (the batch was superseded) or the write was aborted (batch jobs); UNKNOWN otherwise (the
  batch is in flight);
- a record whose committer died before its ``.done`` is finished by the answerer
  (spark/sink_answerer.py), in row order, as the committer would have.

Layout: ``<log dir>/<query>/<batch id, 20 digits>.json`` (``{"writers": [...], "halves":
[[topic, brokerName, queueId, halfQueueOffset, offsetMsgId, msgId], ...], "committer":
"host pid start"}``, halves in END order), ``<batch>.done`` once they were all ended (a JSON
list: the msgIds whose END failed), and
``<log dir>/<query>/aborted``. A stream's log dir is ``<checkpointLocation>/rocketmq-sink``
and its query ``stream``; a batch job's is under the temporary directory, one query per job.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

MOST_ROWS = 4096  # the most messages one half holds (the SDK's send_half_batch takes 4096)

# a half's user properties: which write, batch and task attempt sent it
QUERY_PROPERTY = "SPARK_QUERY"
BATCH_PROPERTY = "SPARK_BATCH"
WRITER_PROPERTY = "SPARK_WRITER"

STREAM_LOG = "rocketmq-sink"  # under a stream's checkpoint
STREAM_QUERY = "stream"  # a checkpoint holds one query
# records kept: Spark's spark.sql.streaming.minBatchesToRetain, and at least as long as a
# broker keeps checking a half (transactionCheckMax 15 x transactionCheckInterval 60 s)
KEEP_BATCHES = 100
KEEP_SECONDS = 3600.0
KEEP_JOBS_SECONDS = 86400.0  # a batch job's records

# a half message's handles: topic, brokerName, queueId (-1: its row gave neither queueId nor
# keys, so its order does not matter), its queue offset in the half topic, its offsetMsgId,
# its msgId (UNIQ_KEY: the broker's copies of it keep it)
Half = tuple[str, str, int, int, str, str]


class Decision(enum.Enum):
    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Record:
    """A committed batch: the task attempts whose halves it committed, those halves, and the
    process that ends them (``process_token``)."""

    writers: tuple[str, ...]
    halves: tuple[Half, ...] = ()
    committer: str = ""
    rows: int = 0  # the rows the halves hold (0: not known, a record written before it)

    def to_json(self) -> bytes:
        return json.dumps(
            {"writers": self.writers, "halves": self.halves, "committer": self.committer,
             "rows": self.rows}
        ).encode()  # fmt: skip

    def per_half(self) -> int:
        """The rows a half holds, at most (a parked batch holds up to 4096; unknown: that)."""
        return -(-self.rows // len(self.halves)) if self.rows and self.halves else MOST_ROWS

    @classmethod
    def from_json(cls, raw: bytes) -> Record:
        data = json.loads(raw)
        halves = tuple(
            (str(t), str(b), int(q), int(o), str(m), str(u)) for t, b, q, o, m, u in data["halves"]
        )
        return cls(tuple(str(w) for w in data["writers"]), halves, str(data["committer"]),
                   int(data.get("rows", 0)))  # fmt: skip


def process_token(pid: int | None = None) -> str:
    """``host pid start``: a process, never a later one given its pid (the start time, in
    clock ticks since boot, from /proc; 0 without /proc)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()} {pid} {_start_time(pid)}"


def alive(token: str) -> bool:
    """Whether the process ``token`` names runs; one on another host is taken as gone (the
    driver moved there)."""
    host, pid, start = token.rsplit(" ", 2)
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return str(_start_time(int(pid))) == start


def _start_time(pid: int) -> int:
    """/proc's start time of ``pid``; 0 without /proc; -1 for a zombie or no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return 0 if not Path("/proc/self").exists() else -1
    fields = stat[stat.rindex(")") + 2 :].split()
    return -1 if fields[0] == "Z" else int(fields[19])


@dataclass(frozen=True)
class Place:
    """Where a write's transactions are decided: the halves' producer group (PGROUP), the
    log directory and the query's name in it. Pickled to the executors with the writer."""

    group: str
    log_dir: str
    query: str
    streaming: bool = False


def local_path(checkpoint_location: str) -> str:
    """The checkpoint as an absolute local path; ValueError for another file system (the
    log is written and read by plain Python on the driver)."""
    parsed = urlparse(checkpoint_location)
    if parsed.scheme in ("", "file") and not parsed.netloc:
        return str(Path(parsed.path if parsed.scheme else checkpoint_location).resolve())
    if len(parsed.scheme) == 1:  # a Windows drive letter
        return str(Path(checkpoint_location).resolve())
    raise ValueError(
        f"exactlyOnce needs a checkpointLocation on a local or mounted file system "
        f"(a path or file:), not {checkpoint_location!r}: the sink keeps its commit log there"
    )


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:16]


def stream_place(producer_group: str, checkpoint_location: str | None) -> Place:
    """A stream's: the same group and log for every run of the query (its checkpoint)."""
    if checkpoint_location is None:
        raise ValueError(
            "exactlyOnce on a stream needs the checkpointLocation option on writeStream "
            "(the sink keeps its commit log in the checkpoint)"
        )
    log_dir = str(Path(local_path(checkpoint_location)) / STREAM_LOG)
    return Place(f"{producer_group}_eo_{_digest(log_dir)}", log_dir, STREAM_QUERY, True)


def batch_place(producer_group: str) -> Place:
    """A batch job's: a query of its own in this host's log for the group."""
    base = Path(tempfile.gettempdir()) / f"aiorocketmq-spark-sink-{os.getuid()}"
    group = f"{producer_group}_eo_{_digest(f'{socket.gethostname()}:{base}')}"
    return Place(group, str(base / group), uuid.uuid4().hex)


class TxLog:
    """One query's records in a log directory."""

    def __init__(self, log_dir: str, query: str) -> None:
        self.dir = Path(log_dir) / query
        self._cache: dict[int, Record] = {}  # records never change once written
        self._failed: dict[int, frozenset[str]] = {}  # nor .done files

    def _path(self, batch: int) -> Path:
        return self.dir / f"{batch:020d}.json"

    def record(self, batch: int, record: Record) -> Record | None:
        """Write ``record`` as batch ``batch``'s, unless one exists: None when this one was
        written, else the record written first (an earlier run committed the batch)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{batch}.{uuid.uuid4().hex}.tmp"
        with tmp.open("wb") as out:
            out.write(record.to_json())
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, self._path(batch))  # atomic, and refuses to replace
        except FileExistsError:
            earlier = self.read(batch)
            assert earlier is not None
            return earlier
        finally:
            tmp.unlink()
        _sync_dir(self.dir)
        return None

    def finished(self, batch: int, failed: Iterable[str] = ()) -> None:
        """Every END of the batch's record was sent; ``failed``: the msgIds of the halves
        whose END got no SUCCESS (check-backs commit those)."""
        tmp = self.dir / f".{batch}.{uuid.uuid4().hex}.done"
        tmp.write_text(json.dumps(sorted(failed)))
        tmp.replace(self._done_path(batch))

    def failed(self, batch: int) -> frozenset[str]:
        """The msgIds whose END failed in a finished batch."""
        found = self._failed.get(batch)
        if found is None:
            found = self._failed[batch] = frozenset(json.loads(self._done_path(batch).read_text()))
        return found

    def is_finished(self, batch: int) -> bool:
        return self._done_path(batch).exists()

    def unfinished(self) -> list[int]:
        """Batches recorded whose ENDs were not all sent (their committer may have died)."""
        return [b for b in self.batches() if not self.is_finished(b)]

    def _done_path(self, batch: int) -> Path:
        return self.dir / f"{batch:020d}.done"

    def read(self, batch: int) -> Record | None:
        found = self._cache.get(batch)
        if found is None:
            try:
                found = Record.from_json(self._path(batch).read_bytes())
            except FileNotFoundError:
                return None
            self._cache[batch] = found
        return found

    def abort(self) -> None:
        """A batch job failed for good: none of its halves is ever committed."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "aborted").touch()
        _sync_dir(self.dir)

    def batches(self) -> list[int]:
        """The batch ids recorded, ascending."""
        try:
            names = [p.name for p in self.dir.iterdir()]
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def decide(self, batch: int, writer: str, msg_id: str) -> Decision:
        """What a check-back about a half (``msg_id``, its UNIQ_KEY) of ``batch`` sent by task
        attempt ``writer`` gets."""
        found = self.read(batch)
        if found is not None:
            if writer not in found.writers:
                return Decision.ROLLBACK
            if not self.is_finished(batch):
                # its committer ENDs the record's halves in row order (or, if it died, the
                # answerer does): a check-back meanwhile would commit out of order
                return Decision.UNKNOWN
            # its END failed: commit it; else the END took, and this is a stale copy the
            # broker made when it checked the half before (Apache's broker would deliver it
            # a second time if told COMMIT)
            return Decision.COMMIT if msg_id in self.failed(batch) else Decision.ROLLBACK
        if (self.dir / "aborted").exists():
            return Decision.ROLLBACK
        if any(b > batch for b in self.batches()):
            return Decision.ROLLBACK
        return Decision.UNKNOWN

    def purge(self, keep: int = KEEP_BATCHES, seconds: float = KEEP_SECONDS) -> None:
        """Drop records more than ``keep`` batches behind and older than ``seconds``."""
        old = time.time() - seconds
        for batch in self.batches()[:-keep]:
            path = self._path(batch)
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < old and self.is_finished(batch):
                    path.unlink()
                    self._done_path(batch).unlink(missing_ok=True)
                    self._cache.pop(batch, None)


def purge_jobs(log_dir: str, seconds: float = KEEP_JOBS_SECONDS) -> None:
    """Drop the batch jobs' records older than ``seconds``."""
    old = time.time() - seconds
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(log_dir):
            if entry.is_dir() and entry.stat().st_mtime < old:
                for child in Path(entry.path).iterdir():
                    child.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    Path(entry.path).rmdir()


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
