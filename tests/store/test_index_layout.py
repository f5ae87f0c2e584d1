"""Index files byte for byte (protocol.md 8.3, Java's IndexFile layout): a put per message and
one put per append write the same bytes as before issue 20's cut 8 (a digest of the files
written then), across files, with a put that fills one file and goes on in the next."""

from __future__ import annotations

import hashlib
from pathlib import Path

from aiorocketmq.broker.store.index import Index

# (store time, [(keys, commitlog offset), ...]) per append; 7 slots, 5 entries per file
APPENDS: list[tuple[int, list[tuple[list[str], int]]]] = [
    (1_700_000_000_000, [(["U0", "k"], 0), (["U1", "k"], 100)]),
    (1_700_000_001_500, [(["U2"], 200), (["U3", "k", "k2"], 300), (["U4"], 400)]),
    (1_700_000_003_000, [([f"w{i}" for i in range(7)], 500)]),  # fills a file, goes on
    (1_699_999_990_000, [(["U5"], 600)]),  # the clock stepped back: a time diff of 0
    (1_700_000_004_999, [(["U6", "é\ud800k"], 700), (["U7", "k"], 800), (["k"], 900)]),
]
# sha256 of the files' bytes, newest last, as the put per message wrote them before the cut
GOLDEN = "cf26ba0eabc4c14a0bd7cf5f7c4f26644289de4392b388366bed2bcaeaf4f47e"


def written(root: Path, *, per_append: bool) -> tuple[str, Index]:
    index = Index(root, 7, 6)
    for stamp, puts in APPENDS:
        if per_append:
            index.put_all("T", puts, stamp)
        else:
            for keys, phys in puts:
                index.put("T", keys, phys, stamp)
    digest = hashlib.sha256(b"".join(f.mm[:] for f in index.files)).hexdigest()
    return digest, index


def test_index_bytes_and_queries(tmp_path: Path) -> None:
    one, index = written(tmp_path / "one", per_append=False)
    batched, again = written(tmp_path / "batched", per_append=True)
    assert one == batched == GOLDEN
    for ix in (index, again):
        assert len(ix.files) == 5
        assert ix.query("T", "k", 8, 0, 2**62) == [900, 800, 300, 100, 0]
        assert ix.query("T", "w6", 8, 0, 2**62) == [500]
        assert ix.query("T", "é\ud800k", 8, 0, 2**62) == [700]
        assert ix.last_update == (1_700_000_004_999, 900)
        ix.close()
