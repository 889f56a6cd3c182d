#!/usr/bin/env python3
"""Seed corpora for Scout's fuzz targets (crates/scout-fuzz).

    python3 fuzz/seeds.py synthetic fuzz/seeds         # the committed seeds, written here
    python3 fuzz/seeds.py fixtures FIXTURES OUT        # more seeds from ../shared/fixtures

`synthetic` builds small captures (pcap and pcapng, both byte orders, four link types; PFCP
session setup, G-PDUs with their N6 twins, IP fragments, GTP-U echo), PFCP message records, srsRAN
log excerpts and scenarios. `fixtures` cuts the shared fixtures into seeds: captures up to 64 KiB
(whole records), the PFCP messages of the captures, 200-line windows of the logs.
"""

import gzip
import os
import shutil
import struct
import sys

# --- packets ---------------------------------------------------------------------------------


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, ident=1, frag=0x4000):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0, bytes(src), bytes(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def ipv6(src, dst, proto, payload):
    return struct.pack("!IHBB16s16s", 0x60000000 | 0x12345, len(payload), proto, 64, bytes(src), bytes(dst)) + payload


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def gtpu(teid, inner, msg_type=255, qfi=9, ul=True, seq=None):
    ext = bytes([1, 0x10 if ul else 0x00, qfi, 0])
    opt = struct.pack("!HBB", seq or 0, 0, 0x85)
    body = opt + ext + inner
    flags = 0x34 | (0x02 if seq is not None else 0)
    return struct.pack("!BBHI", flags, msg_type, len(body), teid) + body


def eth(ip, v6=False):
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + (b"\x86\xdd" if v6 else b"\x08\x00") + ip


def sll(ip, outgoing=False):
    return struct.pack("!HHH8sH", 4 if outgoing else 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", 0x0800) + ip


# --- PFCP (TS 29.244) --------------------------------------------------------------------------


def ie(t, v):
    return struct.pack("!HH", t, len(v)) + v


def pfcp(msg_type, seq, ies, seid=None):
    body = b"".join(ies)
    if seid is None:
        return struct.pack("!BBH", 0x20, msg_type, 4 + len(body)) + struct.pack("!I", seq << 8) + body
    return struct.pack("!BBHQ", 0x21, msg_type, 12 + len(body), seid) + struct.pack("!I", seq << 8) + body


SMF, UPF, GNB, UE, DN = [10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3], [10, 45, 0, 2], [8, 8, 8, 8]


def session(seq=7):
    pdi = ie(2, ie(20, b"\0") + ie(21, b"\x01" + struct.pack("!I", 0x100) + bytes(UPF)) + ie(93, b"\x02" + bytes(UE)) + ie(22, b"\x08internet"))
    req = pfcp(50, seq, [ie(60, b"\0" + bytes(SMF)), ie(57, b"\x02" + struct.pack("!Q", 0xC0DE) + bytes(SMF)),
                         ie(1, ie(56, b"\0\1") + ie(29, b"\0\0\0\xff") + pdi + ie(124, b"\x09")),
                         ie(3, ie(108, b"\0\0\0\1") + ie(44, b"\x02") + ie(4, ie(42, b"\1") + ie(84, b"\x01\0" + struct.pack("!I", 0x200) + bytes(GNB)))),
                         ie(257, b"\x01\x00\x00\x01")], seid=0)
    resp = pfcp(51, seq, [ie(60, b"\0" + bytes(UPF)), ie(19, b"\1"), ie(57, b"\x02" + struct.pack("!Q", 0xBEEF) + bytes(UPF)),
                          ie(8, ie(56, b"\0\1") + ie(21, b"\x01" + struct.pack("!I", 0x100) + bytes(UPF)))], seid=0xC0DE)
    mod = pfcp(52, seq + 1, [ie(10, ie(108, b"\0\0\0\1") + ie(11, ie(84, b"\x01\0" + struct.pack("!I", 0x300) + bytes(GNB))))], seid=0xBEEF)
    hb = pfcp(1, seq + 2, [ie(96, b"\xe0\0\0\0")])
    return req, resp, mod, hb


def packets(t0=1_700_000_000_000_000_000):
    """(t_ns, ip packet, n3?) in time order: a session, then user plane both ways."""
    out = []
    req, resp, mod, hb = session()
    out += [(t0, ipv4(SMF, UPF, 17, udp(8805, 8805, req), 10), None), (t0 + 900_000, ipv4(UPF, SMF, 17, udp(8805, 8805, resp), 20), None)]
    out += [(t0 + 1_000_000, ipv4(SMF, UPF, 17, udp(8805, 8805, mod), 11), None), (t0 + 1_500_000, ipv4(SMF, UPF, 17, udp(8805, 8805, hb), 12), None)]
    t = t0 + 2_000_000
    for i in range(4):
        inner = ipv4(UE, DN, 17, udp(40000, 5201, bytes([i]) * 64), 100 + i)
        out.append((t, ipv4(GNB, UPF, 17, udp(2152, 2152, gtpu(0x100, inner, seq=i))), "n3"))
        out.append((t + 15_000, inner, "n6"))
        back = ipv4(DN, UE, 17, udp(5201, 40000, bytes([i]) * 1200), 300 + i)
        out.append((t + 200_000, back, "n6"))
        out.append((t + 230_000, ipv4(UPF, GNB, 17, udp(2152, 2152, gtpu(0x300, back, ul=False))), "n3"))
        t += 1_000_000
    # A G-PDU in two IP fragments, and its twin.
    inner = ipv4(UE, DN, 6, bytes(40) + b"x" * 1400, 555)
    whole = udp(2152, 2152, gtpu(0x100, inner))
    cut = 600
    out.append((t, ipv4(GNB, UPF, 17, whole[:cut], 77, 0x2000), "n3"))
    out.append((t + 5_000, ipv4(GNB, UPF, 17, whole[cut:], 77, cut // 8), "n3"))
    out.append((t + 20_000, inner, "n6"))
    out.append((t + 40_000, ipv4(GNB, UPF, 17, udp(2152, 2152, gtpu(0, b"\x0e\x00", msg_type=1, seq=1))), "n3"))
    return out


def pcap(frames, linktype=1, big=False, ns=False):
    e = ">" if big else "<"
    magic = 0xA1B23C4D if ns else 0xA1B2C3D4
    out = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for t, d in frames:
        sec, frac = divmod(t, 1_000_000_000)
        out += struct.pack(e + "IIII", sec, frac if ns else frac // 1000, len(d), len(d)) + d
    return out


def block(e, btype, body):
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def opt(e, code, v):
    return struct.pack(e + "HH", code, len(v)) + v + b"\0" * (-len(v) % 4)


def pcapng(frames, big=False):
    """Two interfaces (N3 and N6, ns resolution), EPBs, one SPB and one block of unknown type."""
    e = ">" if big else "<"
    out = block(e, 0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    for name in (b"n3", b"n6"):
        out += block(e, 1, struct.pack(e + "HHI", 1, 0, 65535) + opt(e, 2, name) + opt(e, 9, b"\x09") + opt(e, 0, b""))
    for t, d, side in frames:
        iface = 1 if side == "n6" else 0
        out += block(e, 6, struct.pack(e + "IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(d), len(d)) + d)
    out += block(e, 3, struct.pack(e + "I", 60) + eth(ipv4(SMF, UPF, 17, udp(1, 2, b"spb"))))
    out += block(e, 0x0BAD, b"unknown block")
    return out


# --- srsRAN logs --------------------------------------------------------------------------------

LOG = """\
2023-11-06T20:04:25.000010 [GNB     ] [I] Cell pci=1, bw=20 MHz, 1T1R, dl_arfcn=368500 (n3), dl_freq=1842.5 MHz, dl_ssb_arfcn=368410, ul_freq=1747.5 MHz
2023-11-06T20:04:25.100000 [DU-MNG  ] [I] ue=0 rnti=0x4601: UE created
2023-11-06T20:04:25.100100 [GTPU    ] [I] ue=0 DL teid=0x00000001: RX SDU. sdu_len=84
2023-11-06T20:04:25.100110 [SDAP    ] [D] ue=0 DRB1 DL: TX PDU. QFI=1 pdu_len=84
2023-11-06T20:04:25.100120 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=87 sn=0 count=0
    0000: 80 00 45 00 00 54 00 00 40 00 40 01 26 a7 0a 2d
2023-11-06T20:04:25.100130 [RLC     ] [I] ue=0 DRB1 DL: TX SDU. sdu_len=87 pdcp_sn=0 queued_sdus=1 queued_bytes=87
2023-11-06T20:04:25.100500 [RLC     ] [I] ue=0 DRB1 DL: TX PDU. pdu_len=90 dc=data p=0 si=full sn=0 so=0
2023-11-06T20:04:25.100510 [MAC     ] [I] DL PDU: ue=0 rnti=0x4601 size=100: SDU: lcid=4 nof_sdus=1 total_size=90
2023-11-06T20:04:25.100520 [SCHED   ] [D] [   276.14] Slot decisions pci=1 t=12us (1 PDSCH, 0 PUSCH, 0 PUCCHs):
- UE PDSCH: ue=0 c-rnti=0x4601 h_id=0 rb=[0..10) symb=[2..14) tbs=100 mcs=20 rv=0 nrtx=0 k1=4
2023-11-06T20:04:25.104000 [MAC     ] [D] [   276.18] HARQ-ACK: rnti=0x4601 h_id=0 ack=1 tbs=100
2023-11-06T20:04:25.105000 [MAC     ] [I] [   277.3] UL PDU: ue=0 rnti=0x4601 size=60: SDU: lcid=4 nof_sdus=1 total_size=50
2023-11-06T20:04:25.105010 [RLC     ] [I] ue=0 DRB1 UL: RX PDU. pdu_len=50 dc=data p=0 si=full sn=0 so=0
2023-11-06T20:04:25.105020 [RLC     ] [I] ue=0 DRB1 UL: RX SDU. sdu_len=47 sn=0
2023-11-06T20:04:25.105030 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=47 sn=0 count=0
2023-11-06T20:04:25.105040 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. sdu_len=44 count=0
2023-11-06T20:04:25.105050 [GTPU    ] [I] ue=0 UL teid=0x00000002: TX PDU. pdu_len=60
### Potentially skipped log lines from this point onwards ###
2023-11-06T20:04:25.200000 [METRICS ] [I] Scheduler UE metrics: pci=1 rnti=4601 cqi=15 ri=1 dl_mcs=27 dl_brate_kbps=1000 ul_mcs=20
"""

SCENARIO = """\
name: seed
duration_s: 0.05
cell_cfg: {channel_bandwidth_MHz: 20, common_scs: 30, scheduler: {policy: time_pf}}
qos: [{five_qi: 9, rlc: {mode: am}}, {five_qi: 7, rlc: {mode: um-bidir}}]
ues: [{count: 2, five_qis: [9, 7], channel: {dl_sinr_db: 18, ul_sinr_db: 10}}]
traffic:
  - {type: udp_cbr, ue: all, dir: dl, rate_mbps: 5}
  - {type: on_off, ue: 0, dir: ul, rate_mbps: 2, on: {dist: exponential, mean_ms: 5}, off: {dist: exponential, mean_ms: 5}}
  - {type: video, ue: 1, five_qi: 7, dir: dl, rate_mbps: 3, fps: 60}
  - {type: ping, ue: 0, interval_ms: 5}
"""


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def records(msgs):
    """PFCP messages as the pfcp target's records (`crates/scout-fuzz/src/pfcp.rs`)."""
    out = b""
    for i, (m, back, dup) in enumerate(msgs):
        out += bytes([(1 if back else 0) | (2 if dup else 0) | ((i % 4) << 2)]) + struct.pack("!H", len(m)) + m
    return out


def synthetic(out):
    ps = packets()
    frames = [(t, eth(p)) for t, p, _ in ps]
    write(f"{out}/pcap", "eth-le-us.pcap", pcap(frames))
    write(f"{out}/pcap", "sll-be-ns.pcap", pcap([(t, sll(p, s == "n6")) for t, p, s in ps], linktype=113, big=True, ns=True))
    write(f"{out}/pcap", "raw-ipv6.pcap", pcap([(ps[4][0], ipv6([0] * 15 + [1], [0] * 15 + [2], 17, udp(2152, 2152, gtpu(0x100, ipv6([0xFD] + [0] * 15, [0x20] + [0] * 15, 58, b"\x80\0\0\0" * 4)))))], linktype=101))
    write(f"{out}/pcap", "two-ifaces-le.pcapng", pcapng([(t, eth(p), s) for t, p, s in ps]))
    write(f"{out}/pcap", "two-ifaces-be.pcapng", pcapng([(t, eth(p), s) for t, p, s in ps[:8]], big=True))
    req, resp, mod, hb = session()
    write(f"{out}/pfcp", "session.bin", records([(req, False, False), (req, False, True), (resp, True, False), (mod, False, False), (hb, False, False), (hb, False, False)]))
    write(f"{out}/pfcp", "heartbeat.bin", records([(hb, False, False), (pfcp(2, 9, [ie(96, b"\xe0\0\0\0")]), True, False)]))
    write(f"{out}/srsran", "layers.log", LOG)
    write(f"{out}/srsran", "layers.log.gz", gzip.compress(LOG.encode(), mtime=0))
    write(f"{out}/scenario", "seed.yaml", SCENARIO)


# --- from the shared fixtures -------------------------------------------------------------------


def cut_capture(data, limit=65536):
    """The capture's first records, whole, up to `limit` bytes (pcap only; pcapng kept whole if small)."""
    if len(data) <= limit or data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        return data[:limit] if len(data) > limit else data
    o = 24
    while o + 16 <= len(data):
        n = struct.unpack_from("<I", data, o + 8)[0]
        if o + 16 + n > limit:
            break
        o += 16 + n
    return data[:o]


def frames(data):
    """(link type, frame) of every record of a pcap or pcapng file, either byte order."""
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        o, e, links = 0, "<", []
        while o + 12 <= len(data):
            if data[o : o + 4] == b"\x0a\x0d\x0d\x0a":
                e = "<" if data[o + 8 : o + 12] == b"\x4d\x3c\x2b\x1a" else ">"
                links = []
            btype, n = struct.unpack_from(e + "II", data, o)
            if n < 12 or o + n > len(data):
                return
            if btype == 1:
                links.append(struct.unpack_from(e + "H", data, o + 8)[0])
            elif btype == 6 and links:
                iface, _, _, cap = struct.unpack_from(e + "IIII", data, o + 8)
                yield links[min(iface, len(links) - 1)], data[o + 28 : o + 28 + cap]
            o += n
        return
    if data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        return
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    link = struct.unpack_from(e + "I", data, 20)[0]
    o = 24
    while o + 16 <= len(data):
        n = struct.unpack_from(e + "I", data, o + 8)[0]
        yield link, data[o + 16 : o + 16 + n]
        o += 16 + n


def pfcp_payloads(data):
    """UDP payloads to or from port 8805 (IPv4 over Ethernet, Linux cooked or raw IP)."""
    out = []
    for link, f in frames(data):
        ip = f[14:] if link == 1 else f[16:] if link == 113 else f
        if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        u = ip[(ip[0] & 15) * 4 :]
        if len(u) >= 8 and 8805 in struct.unpack_from("!HH", u, 0):
            out.append(u[8:])
    return out


def fixtures(src, out):
    pdir = os.path.join(src, "pcap")
    for name in sorted(os.listdir(pdir)):
        data = open(os.path.join(pdir, name), "rb").read()
        write(f"{out}/pcap", name, cut_capture(data))
        msgs = pfcp_payloads(data)
        for i in range(0, len(msgs), 8):
            write(f"{out}/pfcp", f"{name}.{i}.bin", records([(m, j % 2 == 1, False) for j, m in enumerate(msgs[i : i + 8])]))
    sdir = os.path.join(src, "srsran")
    for name in sorted(os.listdir(sdir)):
        lines = open(os.path.join(sdir, name), "rb").read().split(b"\n")
        step = max(200, len(lines) // 40)
        for i in range(0, len(lines), step):
            write(f"{out}/srsran", f"{name}.{i}", b"\n".join(lines[i : i + 200]) + b"\n")
    here = os.path.dirname(os.path.abspath(__file__))
    sc = os.path.join(here, "..", "scenarios")
    for name in sorted(os.listdir(sc)):
        if name.endswith(".yaml"):
            write(f"{out}/scenario", name, open(os.path.join(sc, name), "rb").read())

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "synthetic":
        synthetic(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "fixtures":
        fixtures(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
