"""On real data, the analysis says what the source measured and nothing else (the fixtures: an
srsRAN 23.10 DRB log, an srsRAN 24.10 SRB-only log, a UPF capture on `any`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from invariants import fixture, scout_cmd


def ingest_and_analyse(tmp_path: Path, kind: str, rel: str, *extra: str) -> tuple[str, str, dict]:
    out = tmp_path / "run"
    r = scout_cmd("ingest", kind, str(fixture(rel)), "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    a = scout_cmd("analyze", str(out))
    assert a.returncode == 0, a.stderr
    return r.stdout, a.stdout, json.loads((out / "analysis" / "summary.json").read_text())


def test_a_gnb_log_reports_spans_and_retransmissions_not_vacuous_checks(tmp_path: Path) -> None:
    _, out, s = ingest_and_analyse(tmp_path, "srsran", "srsran/srsran-23.10-info-drb.gnb.log")
    assert "0 of 0" not in out, "no check over nothing"
    assert "covers: the gNB as logged" in out
    names = [f["name"] for f in s["headline"]["figures"]]
    assert "DL rlc span" in names and "UL HARQ" in names and "DL span through the gNB" in names
    assert {x["name"] for x in s["headline"]["absent"]} >= {"throughput", "one-way delay and its closure"}
    # Its drops are a missing session and PDUs outside the PDCP receive window: no queue filled, so
    # there is no overload and no phase.
    assert s["drops"] and s["phases"] == [], s["phases"]
    assert "phase " not in out


def test_an_srb_only_log_says_it_has_no_drb_traffic_and_its_release_range(tmp_path: Path) -> None:
    ing, out, s = ingest_and_analyse(tmp_path, "srsran", "srsran/srsran-24.10-debug-srb.gnb.log")
    assert "no data-bearer (DRB) traffic" in ing
    # Its lines allow 24.04 to 25.04 (an SRB's PDCP PDU carries no is_retx= in 24.10); never "24.04" alone.
    assert "release from the line formats: 24.04–25.04" in ing
    assert "packets: none" in out
    assert any("DRB" in x["why"] for x in s["headline"]["absent"])


def test_a_upf_capture_reports_forwarding_delay_and_unmatched_sightings(tmp_path: Path) -> None:
    _, out, s = ingest_and_analyse(tmp_path, "pcap", "pcap/n3-n6-ping-any.pcap")
    assert "incomplete" not in out and "0 of 0" not in out
    assert "UPF forwarding delay UL, slice default: 3,914 packets paired" in out
    assert "N6 sightings with no twin: 35 (capture ended 2, no twin within window 33): UPF drop candidates" in out
    assert s["phases"] == []


def test_a_side_option_that_matches_nothing_is_warned_about(tmp_path: Path) -> None:
    r = scout_cmd("ingest", "pcap", str(fixture("pcap/n3-n6-ping-any.pcap")), "-o", str(tmp_path / "r"), "--n3", "eth7")
    assert r.returncode == 0, r.stderr
    assert "warning: --n3 eth7 matched no frame" in r.stdout


@pytest.mark.parametrize(
    "kind,rel",
    [
        ("pcap", "pcap/n3-n6-ping-any.pcap"),
        ("srsran", "srsran/srsran-23.10-info-drb.gnb.log"),
        ("srsran", "srsran/srsran-24.10-debug-srb.gnb.log"),
    ],
)
def test_perfetto_exports_are_never_silently_empty(tmp_path: Path, kind: str, rel: str) -> None:
    out = tmp_path / "run"
    assert scout_cmd("ingest", kind, str(fixture(rel)), "-o", str(out)).returncode == 0
    for gran in ("packet", "tti", "aggregate"):
        for select in ("slowest", "dropped"):
            r = scout_cmd("export", str(out), "--format", "perfetto", "--granularity", gran, "--select", select)
            assert "Traceback" not in r.stderr, r.stderr
            trace = out / "export" / f"trace-{gran}.json"
            if r.returncode == 0:
                events = json.loads(trace.read_text())["traceEvents"]
                assert any(e["ph"] != "M" for e in events), f"{gran}: an empty trace was written"
                trace.unlink()
            else:
                lines = [x for x in r.stderr.splitlines() if x.startswith("scout export:")]
                assert len(lines) == 1 and "nothing to trace" in lines[0], r.stderr
                assert not trace.exists()


@pytest.mark.parametrize("damage", ["cut", "garbage", "record-length"])
def test_a_damaged_capture_keeps_its_valid_part_and_says_what_was_lost(tmp_path: Path, damage: str) -> None:
    whole = fixture("pcap/n3-n6-ping-any.pcap").read_bytes()
    if damage == "cut":
        data = whole[:2_000_000]
    elif damage == "garbage":
        data = whole + bytes(range(256)) * 20
    else:  # a classic pcap whose third record claims 300 000 bytes (more than Wireshark's 256 KiB)
        data = fixture("pcap/gtp1_gn_normal_incl_fragmentation.pcap").read_bytes()
        first = 24 + 16 + int.from_bytes(data[32:36], "little")
        second = first + 16 + int.from_bytes(data[first + 8 : first + 12], "little")
        data = data[: second + 8] + (300_000).to_bytes(4, "little") + data[second + 12 :]
    f = tmp_path / "damaged.pcap"
    f.write_bytes(data)
    r = scout_cmd("ingest", "pcap", str(f), "-o", str(tmp_path / "r"))
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    line = next(x for x in r.stdout.splitlines() if "damaged:" in x)
    assert "at byte" in line and "not read" in line and "the frames before it are kept" in line, line
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["complete"] is True
    (d,) = meta["counts"]["skipped_inputs"]["damaged_files"]
    assert d["offset"] + d["bytes_not_read"] == len(data)
    frames = meta["pcap"]["files"][0]["frames"]
    assert frames == (20_690 if damage == "garbage" else 2 if damage == "record-length" else frames) and frames > 0
    ok = scout_cmd("ingest", "pcap", str(f), "-o", str(tmp_path / "k"), "--keep-going")
    assert ok.returncode == 0 and "damaged:" in ok.stdout


def test_a_damaged_gzip_log_keeps_its_valid_part_and_says_where(tmp_path: Path) -> None:
    import gzip

    gz = gzip.compress(fixture("srsran/srsran-23.10-info-drb.gnb.log").read_bytes())
    f = tmp_path / "cut.gnb.log.gz"
    f.write_bytes(gz[: len(gz) // 2])
    r = scout_cmd("ingest", "srsran", str(f), "-o", str(tmp_path / "r"))
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    line = next(x for x in r.stdout.splitlines() if "damaged:" in x)
    assert "after line" in line and "the lines before it are kept" in line, line
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    (d,) = meta["counts"]["skipped_inputs"]["damaged_files"]
    assert d["after_line"] > 1000 and meta["ingest"]["files"][0]["entries"] > 1000
    assert scout_cmd("ingest", "srsran", str(f), "-o", str(tmp_path / "k"), "--keep-going").returncode == 0
