"""Hadoop's QJMTestUtil: the fake namespace, the test journal id and op batches."""

from __future__ import annotations

from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.protocol.messages import RequestInfo

__all__ = [
    "FAKE_NSINFO",
    "JID",
    "create_txn_data",
    "create_gabage_txns",
    "make_request",
    "write_op",
    "write_txns",
    "write_segment",
    "recover_and_return_last_txn",
    "verify_edits",
    "close_streams",
    "assert_exists_in_quorum",
    "check_recovery",
    "flip_byte_in_op",
    "op_offsets",
]

FAKE_NSINFO = NamespaceInfo(12345, "mycluster", "my-bp", 0)
JID = "test-journal"


def create_txn_data(start_txid: int, num_txns: int) -> bytes:
    """``num_txns`` serialized MKDIR ops ``"tx <txid>"`` starting at ``start_txid``."""
    return b"".join(
        encode_op(MkdirOp.create(txid, f"tx {txid}"))
        for txid in range(start_txid, start_txid + num_txns)
    )


def create_gabage_txns(start_txid: int, num_txns: int) -> bytes:
    """Frames with valid length and checksum but a body of garbage (Hadoop's createGabageTxns)."""
    from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOpCodes, OpaqueOp

    return b"".join(
        encode_op(
            OpaqueOp(FSEditLogOpCodes.OP_MKDIR, txid, body=bytes(range(txid % 7, txid % 7 + 20)))
        )
        for txid in range(start_txid, start_txid + num_txns)
    )


def make_request(
    serial: int, epoch: int = 1, committed_txid: int = 0, journal_id: str = JID
) -> RequestInfo:
    """Hadoop's makeRI: epoch 1 and committed txid 0 unless told otherwise."""
    return RequestInfo(journal_id, epoch, serial, committed_txid)


# ---- QJM client helpers (Hadoop's QJMTestUtil / TestQuorumJournalManager) --------------------------


def write_op(stm, txid: int) -> None:
    """Buffer the MKDIR ``"tx <txid>"`` in an edit-log output stream."""
    stm.write(MkdirOp.create(txid, f"tx {txid}"))


def write_txns(stm, start_txid: int, num_txns: int) -> None:
    """Write ``num_txns`` MKDIRs from ``start_txid`` as one batch, then flush it."""
    for txid in range(start_txid, start_txid + num_txns):
        write_op(stm, txid)
    stm.set_ready_to_flush()
    stm.flush()


def write_segment(qjm, start_txid: int, num_txns: int, finalize: bool, *, cluster=None):
    """Start segment ``start_txid``, write ``num_txns`` txns in one batch, maybe finalize it.

    Returns the open output stream when not finalizing (else None). With
    ``cluster``, first checks that a quorum of its nodes created the
    in-progress file.
    """
    from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
    from hadoop_qjm.editlog.file_journal_manager import inprogress_edits_file_name

    stm = qjm.start_log_segment(start_txid, CURRENT_LAYOUT_VERSION)
    if cluster is not None:
        assert_exists_in_quorum(cluster, inprogress_edits_file_name(start_txid), qjm.journal_id)
    write_txns(stm, start_txid, num_txns)
    if not finalize:
        return stm
    stm.close()
    qjm.finalize_log_segment(start_txid, start_txid + num_txns - 1)
    return None


def formatted_writer(conf, uri: str):
    """A QuorumJournalManager that formatted the journal at ``uri`` and became its writer
    (epoch 1); the caller closes it."""
    from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

    qjm = QuorumJournalManager(conf, uri, FAKE_NSINFO)
    try:
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
    except BaseException:
        qjm.close()
        raise
    return qjm


def close_streams(streams) -> None:
    for stream in streams:
        stream.close()


def recover_and_return_last_txn(qjm) -> int:
    """Recover, then return the last txid of the finalized segments a reader sees."""
    from hadoop_qjm.common.exceptions import always_assert

    qjm.recover_unfinalized_segments()
    last = 0
    streams = qjm.select_input_streams(0, in_progress_ok=False)
    try:
        for stream in streams:
            always_assert(
                stream.first_txid > last,
                f"stream {stream} starts at {stream.first_txid}, not after {last}",
            )
            last = stream.last_txid
    finally:
        close_streams(streams)
    return last


def verify_edits(streams, first_txid: int, last_txid: int) -> None:
    """The streams hold exactly the MKDIRs ``first_txid..last_txid``, in order."""
    from hadoop_qjm.common.exceptions import always_assert
    from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOpCodes

    remaining = iter(streams)
    stream = next(remaining, None)
    always_assert(stream is not None, "no streams to verify")
    for expected in range(first_txid, last_txid + 1):
        op = stream.read_op()
        while op is None:
            stream = next(remaining, None)
            always_assert(
                stream is not None,
                f"Expected to find txid {expected}, but no more streams available to read from",
            )
            op = stream.read_op()
        always_assert(
            op.opcode == FSEditLogOpCodes.OP_MKDIR, f"txid {op.txid}: {op.opcode.name}, not MKDIR"
        )
        always_assert(op.txid == expected, f"read txid {op.txid}, expected {expected}")
    extra = stream.read_op()
    always_assert(extra is None, f"Expected no more txns after {last_txid}, read {extra}")
    always_assert(
        next(remaining, None) is None,
        f"Expected no more txns after {last_txid} but more streams are available",
    )


def assert_exists_in_quorum(cluster, filename: str, jid: str = JID) -> None:
    """``filename`` is in the current dir of a majority of ``cluster``'s nodes."""
    from hadoop_qjm.common.exceptions import always_assert

    n = cluster.num_journal_nodes
    found = sum((cluster.current_dir(i, jid) / filename).exists() for i in range(n))
    always_assert(found >= n // 2 + 1, f"{filename} exists on only {found} of {n} nodes")


def check_recovery(cluster, segment_txid: int, expected_end_txid: int, jid: str = JID) -> None:
    """A quorum has ``edits_<segment>-<expected end>`` finalized, and no node another end."""
    from hadoop_qjm.common.exceptions import always_assert
    from hadoop_qjm.editlog.file_journal_manager import match_edit_logs

    n = cluster.num_journal_nodes
    finalized = 0
    for i in range(n):
        for log in match_edit_logs(cluster.current_dir(i, jid)):
            if log.first_txid != segment_txid or log.is_in_progress:
                continue
            finalized += 1
            always_assert(
                log.last_txid == expected_end_txid,
                f"File {log} finalized to wrong txid, expected {expected_end_txid}",
            )
    always_assert(
        finalized >= n // 2 + 1,
        f"Did not find a quorum of finalized logs starting at {segment_txid}",
    )


def snapshot_files(directory) -> dict[str, bytes]:
    """Every file under ``directory`` with its bytes: proof that a rejected call changed nothing."""
    import os

    out = {}
    for root, _dirs, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = f.read()
    return out


def op_offsets(path) -> dict[int, int]:
    """{txid: byte offset of its op} of a finalized segment file, found by the ops' length
    fields alone (so an op whose CRC or txid a flipped bit spoiled is still found); the
    txids are counted from the first one in the file name."""
    from pathlib import Path

    from hadoop_qjm.editlog.file_journal_manager import EDITS_REGEX

    path = Path(path)
    m = EDITS_REGEX.fullmatch(path.name)
    if m is None:
        raise ValueError(f"{path.name} is not a finalized segment")
    data = path.read_bytes()
    offsets: dict[int, int] = {}
    txid, pos = int(m.group(1)), 8
    while pos + 5 <= len(data) and data[pos] != 0xFF and txid <= int(m.group(2)):
        offsets[txid] = pos
        pos += int.from_bytes(data[pos + 1 : pos + 5], "big", signed=True) + 5
        txid += 1
    return offsets


def flip_byte_in_op(path, txid: int, delta: int = 20) -> int:
    """Flip one byte inside the op of ``txid`` in segment file ``path`` (bit rot: its CRC
    no longer matches), in place; returns the byte's offset."""
    import os

    offset = op_offsets(path)[txid] + delta
    fd = os.open(path, os.O_RDWR)
    try:
        byte = os.pread(fd, 1, offset)
        os.pwrite(fd, bytes([byte[0] ^ 0x01]), offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return offset


# ---- a journal directory as Hadoop's JournalNode lays it out mid-upgrade (HDFS-5138) ------------
def write_hadoop_version(directory, layout_version: int, ctime: int, ns=FAKE_NSINFO) -> None:
    """``directory/VERSION`` as Hadoop's JNStorage writes it (made if absent)."""
    from pathlib import Path

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "VERSION").write_text(
        "#Thu Dec 01 12:00:00 UTC 2026\n"
        f"namespaceID={ns.namespace_id}\nclusterID={ns.cluster_id}\n"
        f"cTime={ctime}\nstorageType=JOURNAL_NODE\nlayoutVersion={layout_version}\n"
    )


def lay_out_as_hadoop_upgraded(root, layout_version: int, ctime: int) -> None:
    """Turn the (closed) journal directory ``root`` into what Hadoop's Journal.doUpgrade
    leaves: ``previous/`` (the old ``current/``) beside a new ``current/`` with the new
    VERSION, an empty ``paxos/``, the edits files hard-linked and the epoch and
    committed-txid files copied."""
    import os
    from pathlib import Path

    root = Path(root)
    current, previous = root / "current", root / "previous"
    os.rename(current, previous)
    write_hadoop_version(current, layout_version, ctime)
    (current / "paxos").mkdir()
    for name in os.listdir(previous):
        if name.startswith("edits"):
            os.link(previous / name, current / name)
    for name in ("last-promised-epoch", "last-writer-epoch", "committed-txid"):
        if (previous / name).exists():
            (current / name).write_bytes((previous / name).read_bytes())
