"""A broker that stops itself (SIGSTOP) at one file operation, for a test to SIGKILL it
exactly there: ``STOP_AT=call:dir/name:nth python -m tests.broker.stopping_broker <broker
arguments>`` (tests.store.cut_crasher.stop_at: the nth ``os.<call>`` on a path whose
``directory/name`` contains the name). Otherwise the broker's own main, unchanged."""

from __future__ import annotations

import os
import sys

from aiorocketmq.broker.__main__ import main
from tests.store.cut_crasher import stop_at

if __name__ == "__main__":
    call, name, nth = os.environ["STOP_AT"].split(":")
    stop_at(call, name, int(nth))
    sys.exit(main())
