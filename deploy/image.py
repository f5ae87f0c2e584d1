"""The image's entrypoint (deploy/Dockerfile): says on stderr which kind of build the container
runs -- its hot modules compiled with mypyc, or pure Python, as ``make setup``'s last line
does -- then runs its command in its place.

    python3 -m aiorocketmq.deploy.image mqbroker -c /etc/aiorocketmq/broker-a.conf
"""

from __future__ import annotations

import importlib.util
import os
import sys

# one of setup.py's COMPILED modules (the Makefile asks the same one): an extension module
# when the build compiled them, its .py when it did not. Looked up, not imported: the launcher
# side of deploy/ imports no server (pyproject's import-linter contracts)
PROBE = "aiorocketmq.broker.store.store"


def kind() -> str:
    spec = importlib.util.find_spec(PROBE)
    origin = (spec.origin if spec else None) or ""
    if origin.endswith(".so"):
        return "compiled (mypyc)"
    return "pure Python, slower (built with AIOROCKETMQ_PURE=1, or mypyc failed)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(f"aiorocketmq: hot modules {kind()}", file=sys.stderr, flush=True)
    if not args:
        return 0
    os.execvp(args[0], args)  # the container's command, in this process's place


if __name__ == "__main__":
    sys.exit(main())
