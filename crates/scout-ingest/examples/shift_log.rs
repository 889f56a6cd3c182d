//! Makes a large srsRAN log for the ingest benchmark by repeating a real one, each copy shifted in
//! time past the previous (timestamps rewritten, everything else byte for byte):
//! `cargo run --release -p scout-ingest --example shift_log -- IN OUT SIZE_MB`

use std::io::{BufWriter, Write};

use scout_ingest::srsran::line::{format_timestamp, parse_timestamp};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output, size_mb] = &args[..] else {
        eprintln!("usage: shift_log IN OUT SIZE_MB");
        std::process::exit(2)
    };
    let target: u64 = size_mb.parse::<u64>().expect("SIZE_MB is a number") << 20;
    let text = std::fs::read(input).unwrap_or_else(|e| {
        eprintln!("{input}: {e}");
        std::process::exit(2)
    });
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let stamps: Vec<Option<i64>> = lines.iter().map(|l| parse_timestamp(l)).collect();
    let first = stamps.iter().flatten().min().copied().expect("the log has timestamps");
    let last = stamps.iter().flatten().max().copied().expect("the log has timestamps");
    let span = last - first + 1000;
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(output).expect("create OUT"));
    let (mut written, mut copy) = (0u64, 0i64);
    while written < target {
        for (l, t) in lines.iter().zip(&stamps) {
            match t {
                Some(t) => {
                    out.write_all(format_timestamp(t + copy * span).as_bytes()).unwrap();
                    out.write_all(&l[26..]).unwrap();
                }
                None => out.write_all(l).unwrap(),
            }
        }
        written += text.len() as u64;
        copy += 1;
    }
    out.flush().unwrap();
    println!(
        "{output}: {copy} copies of {input}, {:.1} MB, spanning {:.0} s",
        written as f64 / 1e6,
        (copy * span) as f64 / 1e6
    );
}
