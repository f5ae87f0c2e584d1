"""StoreConfig: RocketMQ MessageStoreConfig keys that apply to us, with RocketMQ's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from aiorocketmq.remoting.errors import ConfigError


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


def _default_root() -> str:
    return str(Path.home() / "store")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    # least and most values the store can run with, checked when a config file is loaded
    BOUNDS: ClassVar[dict[str, tuple[int, int | None]]] = {
        "mapped_file_size_commit_log": (4096, None),
        "mapped_file_size_consume_queue": (20, None),  # one unit
        "flush_interval_commit_log": (1, None),
        "flush_interval_consume_queue": (1, None),
        "sync_flush_timeout": (0, None),  # 0: every SYNC_FLUSH put reports FLUSH_DISK_TIMEOUT
        "max_message_size": (1, None),
        "file_reserved_time": (0, None),
        "disk_max_used_space_ratio": (0, 100),
        "disk_space_warning_level_ratio": (0, 100),
        "disk_space_free_floor_mb": (0, None),
        "commit_log_allocate_step_mb": (1, None),
        "max_mapped_consume_queue_files": (16, None),
        "clean_resource_interval": (1, None),
        "max_hash_slot_num": (1, None),
        "max_index_num": (2, None),  # entry 0 is never used
        "access_message_in_memory_max_ratio": (0, 100),
        "max_transfer_bytes_on_message_in_memory": (1, None),
        "max_transfer_count_on_message_in_memory": (1, None),
        "max_transfer_bytes_on_message_in_disk": (1, None),
        "max_transfer_count_on_message_in_disk": (1, None),
        "timer_precision_ms": (1, None),
        "timer_max_delay_sec": (1, None),
        "timer_roll_window_slot": (2, None),
        "mapped_file_size_timer_log": (40, None),
    }

    store_path_root_dir: str = field(default_factory=_default_root)
    store_path_commit_log: str = ""  # "" = <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: int = 500  # ms
    flush_interval_consume_queue: int = 1000  # ms
    sync_flush_timeout: int = 5000  # ms
    max_message_size: int = 4 * 1024 * 1024
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    file_reserved_time: int = 72  # hours
    delete_when: str = "04"  # hours of the day ("04;16") when expired files are deleted
    disk_max_used_space_ratio: int = 75  # % of the disk: beyond it, delete at once
    disk_space_warning_level_ratio: int = 90  # % of the disk: beyond it, refuse writes
    disk_space_free_floor_mb: int = 16  # ours: no file grows into the last MiBs of the disk
    # ours: a CommitLog segment's blocks are allocated this many MiB at a time, ahead of the
    # writer (segment files keep their full size; commitlog.py)
    commit_log_allocate_step_mb: int = 64
    max_mapped_consume_queue_files: int = 16_384  # ours: idle ConsumeQueue files unmapped past it
    clean_resource_interval: int = 10_000  # ms between retention rounds
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    message_index_enable: bool = True
    access_message_in_memory_max_ratio: int = 40
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    # timer messages (5.x MessageStoreConfig; features.md 4.1)
    timer_wheel_enable: bool = True
    timer_precision_ms: int = 1000
    timer_max_delay_sec: int = 259_200  # 3 days
    timer_roll_window_slot: int = 172_800  # slots (2 days at 1 s): later timers roll over
    mapped_file_size_timer_log: int = 40 * 1024 * 1024  # 1 Mi units of 40 bytes
    timer_flush_interval_ms: int = 1000

    def __post_init__(self) -> None:
        try:
            delay_levels(self.message_delay_level)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    @property
    def root(self) -> Path:
        return Path(self.store_path_root_dir).expanduser()

    @property
    def commitlog_dir(self) -> Path:
        if self.store_path_commit_log:
            return Path(self.store_path_commit_log).expanduser()
        return self.root / "commitlog"


_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def delay_levels(text: str) -> list[int]:
    """``messageDelayLevel`` as milliseconds; level n is ``levels[n - 1]``."""
    out = []
    for item in text.split():
        unit = _UNITS.get(item[-1:])
        if unit is None or not item[:-1].isdigit():
            raise ValueError(f"bad delay level {item!r} in messageDelayLevel")
        out.append(int(item[:-1]) * unit)
    return out
