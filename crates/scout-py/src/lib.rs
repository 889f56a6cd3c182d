//! `scout._native`: the Python entry points into Scout's Rust core.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs a scenario file into a new run directory; returns the summary as JSON text.
///
/// `progress`, if given, is called with the completed fraction (0.0–1.0) about every 1 % of
/// simulated time.
#[pyfunction]
#[pyo3(signature = (scenario, out, seed=None, duration=None, sets=Vec::new(), progress=None))]
fn simulate(
    scenario: PathBuf,
    out: PathBuf,
    seed: Option<u64>,
    duration: Option<f64>,
    sets: Vec<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let opts = scout_sim::RunOptions { seed, duration_s: duration, sets };
    let mut cb_err: Option<PyErr> = None;
    let mut report = |f: f64| {
        if let (Some(cb), None) = (progress.as_ref(), cb_err.as_ref()) {
            if let Err(e) = cb.call1((f,)) {
                cb_err = Some(e);
            }
        }
    };
    let result = scout_sim::simulate(&scenario, &out, &opts, &mut report);
    if let Some(e) = cb_err {
        return Err(e);
    }
    result.map(|v| v.to_string()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `scout ingest srsran`: reads srsRAN gNB logs (plain or gzip, in the order given) into a run
/// directory; returns the run's metadata as JSON. `progress(done_bytes, total_bytes)` is called as
/// the logs are read.
#[pyfunction]
#[pyo3(signature = (logs, out, progress=None, traces=Vec::new(), metrics=Vec::new()))]
fn ingest_srsran(
    logs: Vec<PathBuf>,
    out: PathBuf,
    progress: Option<Bound<'_, PyAny>>,
    traces: Vec<PathBuf>,
    metrics: Vec<PathBuf>,
) -> PyResult<String> {
    let mut cb_err: Option<PyErr> = None;
    let mut report = |done: u64, total: u64| {
        if let (Some(cb), None) = (progress.as_ref(), cb_err.as_ref()) {
            if let Err(e) = cb.call1((done, total)) {
                cb_err = Some(e);
            }
        }
    };
    let result = scout_ingest::srsran::run::ingest(&logs, &traces, &metrics, &out, &mut report);
    if let Some(e) = cb_err {
        return Err(e);
    }
    result.map(|v| v.to_string()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `scout ingest pcap`: reads pcap/pcapng captures of N3, N6 and N4 into a run directory (UPF
/// forwarding delay by packet identity, PFCP request/response pairs); returns the run's metadata.
#[pyfunction]
#[pyo3(signature = (files, out, progress=None, gtp_ports=vec![2152], n3=Vec::new(), n6=Vec::new(), window_s=2.0))]
fn ingest_pcap(
    files: Vec<PathBuf>,
    out: PathBuf,
    progress: Option<Bound<'_, PyAny>>,
    gtp_ports: Vec<u16>,
    n3: Vec<String>,
    n6: Vec<String>,
    window_s: f64,
) -> PyResult<String> {
    let mut cb_err: Option<PyErr> = None;
    let mut report = |done: u64, total: u64| {
        if let (Some(cb), None) = (progress.as_ref(), cb_err.as_ref()) {
            if let Err(e) = cb.call1((done, total)) {
                cb_err = Some(e);
            }
        }
    };
    let opts = scout_ingest::pcap::run::Options { gtp_ports, n3, n6, window_ns: (window_s * 1e9) as i64 };
    let result = scout_ingest::pcap::run::ingest(&files, &opts, &out, &mut report);
    if let Some(e) = cb_err {
        return Err(e);
    }
    result.map(|v| v.to_string()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The event schema version this build writes.
#[pyfunction]
fn schema_version() -> u32 {
    scout_events::SCHEMA_VERSION
}

/// Enumerations of the schema (name → list of values), for docs and validation.
#[pyfunction]
fn schema_enums() -> Vec<(String, Vec<String>)> {
    use scout_events::*;
    let v = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
    vec![
        ("node".into(), v(Node::NAMES)),
        ("layer".into(), v(Layer::NAMES)),
        ("point".into(), v(Point::NAMES)),
        ("dir".into(), v(Dir::NAMES)),
        ("reason".into(), v(Reason::NAMES)),
        ("queue".into(), v(Queue::NAMES)),
    ]
}

/// Column names of each event table, in order.
#[pyfunction]
fn schema_columns() -> Vec<(String, Vec<String>)> {
    use scout_events::writer::*;
    [("packet_events", packet_schema()), ("slot_events", slot_schema()), ("control_events", control_schema())]
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.fields().iter().map(|f| f.name().clone()).collect()))
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_srsran, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_pcap, m)?)?;
    m.add_function(wrap_pyfunction!(schema_version, m)?)?;
    m.add_function(wrap_pyfunction!(schema_enums, m)?)?;
    m.add_function(wrap_pyfunction!(schema_columns, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
