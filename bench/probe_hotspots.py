#!/usr/bin/env python3
"""Where the probe's programs spend their time, by source line (root; while the probe is attached).

Samples every CPU with `perf record -e cpu-clock` (no hardware counters needed, so it works in a
VM), keeps the samples that fall inside the named BPF programs' JIT images, and maps each sample's
offset to the C source line it belongs to through the program's `jited_line_info` (read with the
bpf() syscall's BPF_OBJ_GET_INFO_BY_FD; bpftool's own `dump jited` needs a libbfd that Debian's
build lacks). A line that holds far more samples than its instructions' share is waiting: for a
load that misses the cache, the samples land on the instruction after it.

    sudo ./target/release/examples/probe_bench 250000 12 &   # or a real `scout probe`
    sleep 4; sudo python3 bench/probe_hotspots.py n3_ingress n6_ingress --seconds 4

Sampling adds interrupts: the cost the programs report while it runs is higher than without.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile

SYS_BPF = 321  # x86-64
BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD, BPF_BTF_GET_FD_BY_ID = 13, 15, 19
_libc = ctypes.CDLL(None, use_errno=True)


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, len(attr))
    r = _libc.syscall(SYS_BPF, cmd, buf, len(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf({cmd}): {os.strerror(e)}")
    return r


def _info(fd: int, info: bytearray) -> bytes:
    ib = ctypes.create_string_buffer(bytes(info), len(info))
    _bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("<IIQ", fd, len(info), ctypes.addressof(ib)))
    return ib.raw


def line_table(prog_id: int) -> list[tuple[int, int, str]]:
    """(offset in the JIT image, source line number, source text) for each line-info record."""
    fd = _bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("<I", prog_id).ljust(128, b"\0"))
    # struct bpf_prog_info: btf_id @128, nr_line_info @148, line_info @152, jited_line_info @160,
    # nr_jited_line_info @168, line_info_rec_size @172, jited_line_info_rec_size @176.
    raw = _info(fd, bytearray(256))
    btf_id, nli, nj, lrs, jrs = (struct.unpack_from("<I", raw, o)[0] for o in (128, 148, 168, 172, 176))
    li, jli = ctypes.create_string_buffer(nli * lrs), ctypes.create_string_buffer(nj * jrs)
    req = bytearray(256)
    struct.pack_into("<IQQIII", req, 148, nli, ctypes.addressof(li), ctypes.addressof(jli), nj, lrs, jrs)
    _info(fd, req)
    btf_fd = _bpf(BPF_BTF_GET_FD_BY_ID, struct.pack("<I", btf_id).ljust(128, b"\0"))
    size = 1 << 22
    bb = ctypes.create_string_buffer(size)
    _info(btf_fd, bytearray(struct.pack("<QII", ctypes.addressof(bb), size, 0)))  # struct bpf_btf_info
    btf = bb.raw
    hdr_len, _, _, str_off, str_len = struct.unpack_from("<IIIII", btf, 4)
    strs = btf[hdr_len + str_off : hdr_len + str_off + str_len]
    addrs = [struct.unpack_from("<Q", jli.raw, i * jrs)[0] for i in range(nj)]
    out = []
    for i, a in enumerate(addrs):
        _, _, line_off, line_col = struct.unpack_from("<IIII", li.raw, i * lrs)
        text = strs[line_off : strs.index(b"\0", line_off)].decode(errors="replace").strip()
        out.append((a - addrs[0], line_col >> 10, text))
    return out


def prog_ids(names: list[str]) -> dict[str, int]:
    ids, next_id = {}, ctypes.c_uint32(0)
    while True:
        attr = bytearray(struct.pack("<I", next_id.value).ljust(128, b"\0"))
        buf = ctypes.create_string_buffer(bytes(attr), len(attr))
        if _libc.syscall(SYS_BPF, 11, buf, len(attr)) < 0:  # BPF_PROG_GET_NEXT_ID
            return ids
        next_id.value = struct.unpack_from("<I", buf.raw, 4)[0]
        fd = _bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("<I", next_id.value).ljust(128, b"\0"))
        name = _info(fd, bytearray(256))[64:80].split(b"\0")[0].decode()
        os.close(fd)
        if name in names:
            ids[name] = next_id.value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="+", help="program names, e.g. n3_ingress n6_ingress")
    ap.add_argument("--seconds", type=float, default=4.0, help="how long to sample (default 4)")
    ap.add_argument("--top", type=int, default=15, help="lines to show per program (default 15)")
    a = ap.parse_args()
    ids = prog_ids(a.programs)
    missing = [p for p in a.programs if p not in ids]
    if missing:
        print(f"probe_hotspots: no loaded BPF program named {', '.join(missing)} (is the probe attached?)", file=sys.stderr)
        return 2
    tables = {p: line_table(i) for p, i in ids.items()}  # while the programs are still loaded
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        rec = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-a", "-o", data, "--", "sleep", str(a.seconds)]
        subprocess.run(rec, check=True, stderr=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,symoff"], capture_output=True, text=True)
    samples = collections.defaultdict(list)
    for line in script.stdout.splitlines():
        sym, _, off = line.split()[-1].rpartition("+0x") if line.strip() else ("", "", "")
        for p in tables:
            if sym.endswith("_" + p):
                samples[p].append(int(off, 16))
    for p, table in tables.items():
        offs = [t[0] for t in table]
        count = collections.Counter()
        for off in samples[p]:
            i = bisect.bisect_right(offs, off) - 1
            count[table[i][1:]] += 1
        total = len(samples[p]) or 1
        print(f"{p}: {len(samples[p])} samples")
        for (ln, text), n in count.most_common(a.top):
            print(f"  {100 * n / total:5.1f}%  line {ln:4d}  {text[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
