//! The event writer on real rows: reads the first N rows of a run's packet events (any
//! producer's: an emulator run's are what the emulator's writer must keep up with), holds them in
//! memory, and writes them again through `RunWriter` into a temporary run directory, three
//! times. Prints the writer thread's CPU time per row (what competes with the emulator's data path
//! for the machine; read just before the last row group is written, so a little under the whole),
//! the producer's (taking a held row and handing it over, which the emulator's data path pays for
//! every event) and the bytes per row written. CPU times are the threads' `schedstat` (ns).
//! `cargo run --release -p scout-events --example writer_replay RUN [N]`

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use scout_events::writer::RunWriter;
use scout_events::*;

/// The names of a dictionary column's rows (`None` where null).
fn names(col: &dyn Array) -> Vec<Option<String>> {
    let d = col.as_dictionary::<UInt8Type>();
    let values = d.values().as_string::<i32>();
    d.keys().iter().map(|k| k.map(|k| values.value(usize::from(k)).to_string())).collect()
}

fn rows_of(b: &RecordBatch, slices: &mut Vec<String>, out: &mut Vec<PacketEvent>, limit: usize) {
    let col = |name: &str| b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    let (node, layer, point, dir) = (names(col("node")), names(col("layer")), names(col("point")), names(col("dir")));
    let (slice, queue, reason) = (names(col("slice")), names(col("queue")), names(col("reason")));
    let t = col("t_ns").as_primitive::<Int64Type>();
    let ue = col("ue").as_primitive::<UInt32Type>();
    let rnti = col("rnti").as_primitive::<UInt16Type>();
    let drb = col("drb").as_primitive::<UInt8Type>();
    let qfi = col("qfi").as_primitive::<UInt8Type>();
    let flow = col("flow").as_primitive::<UInt32Type>();
    let pkt = col("pkt").as_primitive::<UInt64Type>();
    let sn = col("sn").as_primitive::<UInt32Type>();
    let seg_offset = col("seg_offset").as_primitive::<UInt32Type>();
    let seg_last = col("seg_last").as_boolean();
    let bytes = col("bytes").as_primitive::<UInt32Type>();
    let queue_bytes = col("queue_bytes").as_primitive::<UInt64Type>();
    let queue_pkts = col("queue_pkts").as_primitive::<UInt32Type>();
    let retx = col("retx").as_primitive::<UInt8Type>();
    let ecn = col("ecn").as_primitive::<UInt8Type>();
    let opt = |a: &dyn Array, i: usize| a.is_valid(i);
    for i in 0..b.num_rows().min(limit - out.len()) {
        let s = slice[i].clone().unwrap_or_default();
        let slice_idx = slices.iter().position(|x| *x == s).unwrap_or_else(|| {
            slices.push(s);
            slices.len() - 1
        });
        let name = |v: &Vec<Option<String>>| v[i].clone().unwrap_or_default();
        out.push(PacketEvent {
            ue: ue.value(i),
            rnti: opt(rnti, i).then(|| rnti.value(i)),
            drb: opt(drb, i).then(|| drb.value(i)),
            qfi: opt(qfi, i).then(|| qfi.value(i)),
            slice: slice_idx as u8,
            flow: flow.value(i),
            sn: opt(sn, i).then(|| sn.value(i)),
            seg_offset: opt(seg_offset, i).then(|| seg_offset.value(i)),
            seg_last: opt(seg_last, i).then(|| seg_last.value(i)),
            bytes: bytes.value(i),
            queue: queue[i].as_deref().and_then(Queue::from_name),
            queue_bytes: opt(queue_bytes, i).then(|| queue_bytes.value(i)),
            queue_pkts: opt(queue_pkts, i).then(|| queue_pkts.value(i)),
            retx: retx.value(i),
            reason: reason[i].as_deref().and_then(Reason::from_name),
            ecn: ecn.value(i),
            ..PacketEvent::new(
                t.value(i),
                (
                    Node::from_name(&name(&node)).expect("node"),
                    Layer::from_name(&name(&layer)).expect("layer"),
                    Point::from_name(&name(&point)).expect("point"),
                ),
                Dir::from_name(&name(&dir)).expect("dir"),
                pkt.value(i),
            )
        });
    }
}

/// CPU time (s) of the thread whose /proc directory is `task`: its time on a CPU, in ns, the
/// first field of `schedstat`.
fn task_cpu_s(task: &Path) -> f64 {
    let stat = std::fs::read_to_string(task.join("schedstat")).unwrap_or_default();
    stat.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1e9
}

/// CPU time (s) of this process's threads named `name`.
fn thread_cpu_s(name: &str) -> f64 {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim() == name)
        .map(|t| task_cpu_s(&t.path()))
        .sum()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(run) = args.next() else {
        eprintln!("usage: writer_replay RUN [ROWS]  (RUN: a run directory with events/packet*.parquet)");
        std::process::exit(2);
    };
    let limit: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000_000);
    let mut files: Vec<_> = std::fs::read_dir(Path::new(&run).join("events"))
        .expect("RUN/events")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("packet")))
        .collect();
    files.sort();
    let (mut rows, mut slices) = (Vec::with_capacity(limit), Vec::new());
    for f in files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).expect("open"))
            .expect("parquet")
            .build()
            .expect("reader");
        for b in reader {
            rows_of(&b.expect("batch"), &mut slices, &mut rows, limit);
            if rows.len() >= limit {
                break;
            }
        }
    }
    if slices.is_empty() {
        slices.push("default".into());
    }
    let n = rows.len();
    if n == 0 {
        eprintln!("writer_replay: {run}/events holds no packet events");
        std::process::exit(1);
    }
    let (mut per_row, mut produce) = (Vec::new(), Vec::new());
    for round in 1..=3 {
        let dir = std::env::temp_dir().join(format!("scout-writer-replay-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let t0 = std::time::Instant::now();
        let mut w = RunWriter::create(&dir, serde_json::json!({"source": "replay"}), &slices).expect("create");
        // The producer's side (the emulator's data path pays it for every event): this thread's
        // CPU while it takes each held row and hands it over (waiting for a full writer queue is
        // sleeping, not CPU).
        let me = Path::new("/proc/thread-self");
        let producer_before = task_cpu_s(me);
        for r in &rows {
            w.packet(r.clone());
        }
        let producer = task_cpu_s(me) - producer_before;
        // The writer thread's CPU, read before it ends with `finish`.
        let cpu_before_close = thread_cpu_s("scout-writer");
        w.finish(serde_json::json!({})).expect("finish");
        let s = t0.elapsed().as_secs_f64();
        let size: u64 = std::fs::read_dir(dir.join("events"))
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        let (writer_ns, producer_ns) = (cpu_before_close * 1e9 / n as f64, producer * 1e9 / n as f64);
        println!(
            "round {round}: {n} rows in {s:.2} s ({:.1} M rows/s); writer thread CPU ≥ {cpu_before_close:.2} s \
             = {writer_ns:.0} ns/row; producer {producer_ns:.1} ns/row; {:.2} bytes/row",
            n as f64 / s / 1e6,
            size as f64 / n as f64
        );
        per_row.push(writer_ns);
        produce.push(producer_ns);
        let _ = std::fs::remove_dir_all(&dir);
    }
    per_row.sort_by(f64::total_cmp);
    produce.sort_by(f64::total_cmp);
    println!(
        "writer on {n} rows of {run}: median {:.0} ns of its thread's CPU per row (the producer's: {:.1} ns)",
        per_row[1], produce[1]
    );
}
