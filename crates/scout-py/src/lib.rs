//! `scout._native`: the Python entry points into Scout's Rust core.

use std::ops::ControlFlow;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Reports progress to an optional Python callback and answers whether the work should go on.
///
/// Python's signal handlers run here (Ctrl-C raises `KeyboardInterrupt`, the CLI's SIGTERM
/// handler its own exception), so native work stops within one progress interval. The first
/// exception, from a handler or from the callback, stops the work and is raised when the
/// native call returns.
struct Reporter<'py> {
    py: Python<'py>,
    callback: Option<Bound<'py, PyAny>>,
    error: Option<PyErr>,
}

impl<'py> Reporter<'py> {
    fn new(py: Python<'py>, callback: Option<Bound<'py, PyAny>>) -> Self {
        Reporter { py, callback, error: None }
    }

    /// Runs Python's pending signal handlers: `Break` once one of them (or the callback) raised.
    fn check(&mut self) -> ControlFlow<()> {
        if self.error.is_none() {
            if let Err(e) = self.py.check_signals() {
                self.error = Some(e);
            }
        }
        if self.error.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// [`Reporter::check`], then the callback with `args`.
    fn report(&mut self, args: impl pyo3::call::PyCallArgs<'py>) -> ControlFlow<()> {
        self.check()?;
        if let Some(cb) = &self.callback {
            if let Err(e) = cb.call1(args) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// The native result, or the exception that stopped it.
    fn result<E: std::fmt::Display>(self, r: Result<serde_json::Value, E>) -> PyResult<String> {
        match self.error {
            Some(e) => Err(e),
            None => r.map(|v| v.to_string()).map_err(|e| PyValueError::new_err(e.to_string())),
        }
    }
}

/// Runs a scenario file into a new run directory; returns the summary as JSON text.
///
/// `progress`, if given, is called with the completed fraction (0.0–1.0) about every 1 % of
/// simulated time. Ctrl-C stops the simulation promptly; the unfinished run is removed.
#[pyfunction]
#[pyo3(signature = (scenario, out, seed=None, duration=None, sets=Vec::new(), progress=None, live=None))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    scenario: PathBuf,
    out: PathBuf,
    seed: Option<u64>,
    duration: Option<f64>,
    sets: Vec<String>,
    progress: Option<Bound<'_, PyAny>>,
    live: Option<PyRef<'_, LiveServer>>,
) -> PyResult<String> {
    let opts = scout_sim::RunOptions { seed, duration_s: duration, sets, live: live.map(|l| l.0.tap()) };
    let mut rep = Reporter::new(py, progress);
    let mut shown = -1.0;
    let result = scout_sim::simulate(&scenario, &out, &opts, &mut |f: f64| {
        // The simulator asks often (so that a stop is prompt); Python hears of each 1 %.
        if f - shown >= 0.01 || f >= 1.0 {
            shown = f;
            rep.report((f,))
        } else {
            rep.check()
        }
    });
    rep.result(result)
}

/// `scout emulate`: runs a scenario on the wall clock with real packets between network
/// namespaces (root); returns the run's metadata as JSON. `ready(namespaces)` is called once the
/// namespaces are up (the DN's first); `progress(elapsed_s, duration_s, packets)` about every
/// 100 ms. Ctrl-C ends the emulation and writes the run.
#[pyfunction]
#[pyo3(signature = (scenario, out, seed=None, duration=None, sets=Vec::new(), shell=false, ready=None, progress=None, offload=true, upf_binary=None, probe=false, capture=false, live=None))]
#[allow(clippy::too_many_arguments)]
fn emulate(
    py: Python<'_>,
    scenario: PathBuf,
    out: PathBuf,
    seed: Option<u64>,
    duration: Option<f64>,
    sets: Vec<String>,
    shell: bool,
    ready: Option<Bound<'_, PyAny>>,
    progress: Option<Bound<'_, PyAny>>,
    offload: bool,
    upf_binary: Option<PathBuf>,
    probe: bool,
    capture: bool,
    live: Option<PyRef<'_, LiveServer>>,
) -> PyResult<String> {
    let loaded = scout_sim::scenario::load(&scenario, &sets).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let live = live.map(|l| l.0.tap());
    let opts =
        scout_emu::driver::Options { duration_s: duration, seed, shell, offload, upf_binary, probe, capture, live };
    let mut rep = Reporter::new(py, progress);
    let mut ready_error = None;
    let result = scout_emu::driver::emulate(
        &loaded,
        &out,
        &opts,
        &mut |names| {
            if let Some(cb) = &ready {
                if let Err(e) = cb.call1((names.to_vec(),)) {
                    ready_error = Some(e);
                }
            }
        },
        // Ctrl-C ends the emulation like its end: the run is written (not an interruption).
        &mut |p| rep.report((p.elapsed_s, p.duration_s, p.packets)),
    );
    if let Some(e) = ready_error {
        return Err(e);
    }
    match result {
        Ok(meta) => Ok(meta.to_string()),
        Err(e) => Err(rep.error.take().unwrap_or_else(|| PyValueError::new_err(e.to_string()))),
    }
}

/// `scout cleanup`: removes what emulators that were killed left behind (their namespaces and
/// the processes in them, their tracefs instances); returns the namespaces and the instances
/// removed, and the instances that could not be, with why.
#[pyfunction]
fn emulate_cleanup(py: Python<'_>) -> PyResult<(Vec<String>, Vec<String>, Vec<String>)> {
    let s = py.detach(scout_emu::remove_stale).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((s.namespaces, s.trace_instances, s.problems))
}

/// Runs an ingest that reports `(done_bytes, total_bytes)`, passing each report to the Python
/// callback; returns the run's metadata as JSON text. Ctrl-C stops it at the next report.
fn with_byte_progress<'py, E: std::fmt::Display>(
    py: Python<'py>,
    progress: Option<Bound<'py, PyAny>>,
    run: impl FnOnce(&mut dyn FnMut(u64, u64) -> ControlFlow<()>) -> Result<serde_json::Value, E>,
) -> PyResult<String> {
    let mut rep = Reporter::new(py, progress);
    let result = run(&mut |done, total| rep.report((done, total)));
    rep.result(result)
}

/// `scout ingest srsran`: reads srsRAN gNB logs (plain or gzip, in the order given) into a run
/// directory; returns the run's metadata as JSON. `progress(done_bytes, total_bytes)` is called as
/// the logs are read.
#[pyfunction]
#[pyo3(signature = (logs, out, progress=None, traces=Vec::new(), metrics=Vec::new()))]
fn ingest_srsran(
    py: Python<'_>,
    logs: Vec<PathBuf>,
    out: PathBuf,
    progress: Option<Bound<'_, PyAny>>,
    traces: Vec<PathBuf>,
    metrics: Vec<PathBuf>,
) -> PyResult<String> {
    with_byte_progress(py, progress, |report| scout_ingest::srsran::run::ingest(&logs, &traces, &metrics, &out, report))
}

/// `scout ingest pcap`: reads pcap/pcapng captures of N3, N6 and N4 into a run directory (UPF
/// forwarding delay by packet identity, PFCP request/response pairs); returns the run's metadata.
#[pyfunction]
#[pyo3(signature = (files, out, progress=None, gtp_ports=vec![2152], n3=Vec::new(), n6=Vec::new(), window_s=2.0))]
#[allow(clippy::too_many_arguments)] // the CLI's options, one by one, as the other entry points take them
fn ingest_pcap(
    py: Python<'_>,
    files: Vec<PathBuf>,
    out: PathBuf,
    progress: Option<Bound<'_, PyAny>>,
    gtp_ports: Vec<u16>,
    n3: Vec<String>,
    n6: Vec<String>,
    window_s: f64,
) -> PyResult<String> {
    let opts = scout_ingest::pcap::run::Options { gtp_ports, n3, n6, window_ns: (window_s * 1e9) as i64 };
    with_byte_progress(py, progress, |report| scout_ingest::pcap::run::ingest(&files, &opts, &out, report))
}

/// `scout probe`: attaches Scout's TC-BPF programs to each UPF's N3 and N6 interfaces (inside
/// their network namespaces) and writes the packets it pairs to a run until `duration` seconds
/// pass or Ctrl-C; returns the run's metadata. `progress(elapsed_s, pairs, lost)` is called every
/// second.
#[pyfunction]
#[pyo3(signature = (n3, n6, out, slices=Vec::new(), duration=None, histogram=false, window_s=2.0, gtp_port=2152, progress=None, pfcp=Vec::new(), table_sets=scout_probe::DEFAULT_TABLE_SETS, pairing="any-cpu", live=None))]
#[allow(clippy::too_many_arguments)]
fn probe(
    py: Python<'_>,
    n3: Vec<String>,
    n6: Vec<String>,
    out: PathBuf,
    slices: Vec<String>,
    duration: Option<f64>,
    histogram: bool,
    window_s: f64,
    gtp_port: u16,
    progress: Option<Bound<'_, PyAny>>,
    pfcp: Vec<String>,
    table_sets: u32,
    pairing: &str,
    live: Option<PyRef<'_, LiveServer>>,
) -> PyResult<String> {
    use scout_probe::{Options, Pairing, Side, Upf};
    if n3.len() != n6.len() || n3.is_empty() {
        return Err(PyValueError::new_err(format!(
            "give --n3 and --n6 once per UPF, in the same order ({} --n3, {} --n6)",
            n3.len(),
            n6.len()
        )));
    }
    if !slices.is_empty() && slices.len() != n3.len() {
        return Err(PyValueError::new_err(format!(
            "give --slice once per UPF ({} UPFs, {} --slice)",
            n3.len(),
            slices.len()
        )));
    }
    let mut upfs = Vec::new();
    for (i, (a, b)) in n3.iter().zip(&n6).enumerate() {
        let e = |e: scout_probe::ProbeError| PyValueError::new_err(e.to_string());
        upfs.push(Upf {
            n3: Side::parse(a).map_err(e)?,
            n6: Side::parse(b).map_err(e)?,
            slice: slices.get(i).cloned().unwrap_or_else(|| "default".into()),
        });
    }
    let opts = Options {
        upfs,
        duration: duration.map(std::time::Duration::from_secs_f64),
        histogram_only: histogram,
        window: std::time::Duration::from_secs_f64(window_s),
        gtp_port,
        pfcp: pfcp
            .iter()
            .map(|p| Side::parse(p))
            .collect::<Result<_, _>>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
        table_sets,
        pairing: Pairing::parse(pairing).map_err(|e| PyValueError::new_err(e.to_string()))?,
        live: live.map(|l| l.0.tap()),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut cb_err: Option<PyErr> = None;
    let mut report = |p: &scout_probe::Progress| {
        // Ctrl-C: Python's handler runs here; the probe then detaches and writes what it has.
        if let Err(e) = py.check_signals() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            cb_err.get_or_insert(e);
            return;
        }
        if let (Some(cb), None) = (progress.as_ref(), cb_err.as_ref()) {
            if let Err(e) = cb.call1((p.elapsed_s, p.pairs, p.lost)) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                cb_err = Some(e);
            }
        }
    };
    let result = scout_probe::run(&opts, &out, &stop, &mut report);
    match (result, cb_err) {
        (Ok(v), Some(e)) if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => Ok(v.to_string()),
        (_, Some(e)) => Err(e),
        (r, None) => r.map(|v| v.to_string()).map_err(|e| PyValueError::new_err(e.to_string())),
    }
}

/// The event schema version this build writes.
/// `scout recover`: makes a checkpointed run whose producer was killed readable (the events up
/// to its last checkpoint); returns its new `run.json` as JSON text.
#[pyfunction]
fn recover(py: Python<'_>, run: PathBuf) -> PyResult<String> {
    py.detach(|| scout_events::writer::recover(&run))
        .map(|v| v.to_string())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

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

/// The attribution kernel (`scout-analysis`), started on a thread of its own: writes `journeys`,
/// `components`, `layer_delays`, `profiles`, `sojourns`, `queues` (bins of `bin_ns`) and, when the
/// events are read at once and the slot table is of Scout's schema, `tti` (`rows.tti`: null when
/// not) of the run
/// whose event tables are in `events_dir` into `out_dir`. `memory`: the bytes it may use (`None`:
/// what the machine or the process's cgroup has available); events that need more are read in
/// windows of packets. Returns at once, so that Python imports what the rest of the analysis needs
/// (Ibis, pandas: ~0.5 s) while the kernel runs: `wait()` returns what the summary reports from its
/// tables as JSON (without the GIL; Ctrl-C stops it); `stop()`, or the handle's end, stops it
/// within milliseconds and waits for it.
#[pyfunction]
#[pyo3(signature = (events_dir, out_dir, window_s, duration_ns, bin_ns, threads=2, memory=None))]
fn attribute_start(
    events_dir: PathBuf,
    out_dir: PathBuf,
    window_s: Option<f64>,
    duration_ns: i64,
    bin_ns: i64,
    threads: usize,
    memory: Option<u64>,
) -> PyResult<Attribution> {
    let opt = scout_analysis::Options {
        window_ns: window_s.filter(|w| *w > 0.0).map(|w| (w * 1e9) as i64),
        duration_ns,
        threads,
        bin_ns,
        memory,
        stop: scout_analysis::Stop::default(),
    };
    let stop = opt.stop.clone();
    let work = std::thread::Builder::new()
        .name("scout-attribute".into())
        .spawn(move || scout_analysis::analyze(&events_dir, &out_dir, &opt, &mut |_| {}))
        .map_err(|e| PyValueError::new_err(format!("the attribution kernel's thread: {e}")))?;
    Ok(Attribution { work: std::sync::Mutex::new(Some(work)), stop })
}

type KernelWork = std::thread::JoinHandle<Result<scout_analysis::Summary, scout_analysis::Error>>;

/// The attribution kernel running (see `attribute_start`).
#[pyclass]
struct Attribution {
    work: std::sync::Mutex<Option<KernelWork>>,
    stop: scout_analysis::Stop,
}

#[pymethods]
impl Attribution {
    /// Waits for the kernel and returns what the summary reports (JSON); a bad run is a
    /// `ValueError`. This thread runs Python's signal handlers every 20 ms meanwhile, so Ctrl-C
    /// stops the kernel (at its next check) within milliseconds.
    fn wait(&self, py: Python<'_>) -> PyResult<String> {
        let Some(work) = self.work.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Err(PyValueError::new_err("the attribution kernel was already waited for or stopped"));
        };
        while !work.is_finished() {
            if let Err(e) = py.check_signals() {
                self.stop.stop();
                let _ = py.detach(|| work.join());
                return Err(e);
            }
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(20)));
        }
        let s =
            work.join().expect("the attribution kernel panicked").map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(summary_json(&s))
    }

    /// Stops the kernel and waits for it (what it wrote is incomplete: `*.partial`).
    fn stop(&self, py: Python<'_>) {
        self.stop.stop();
        if let Some(work) = self.work.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = py.detach(|| work.join());
        }
    }
}

impl Drop for Attribution {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(work) = self.work.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = work.join();
        }
    }
}

/// What the summary reports from the kernel's tables, as JSON.
fn summary_json(s: &scout_analysis::Summary) -> String {
    let c = &s.closure;
    let v = serde_json::json!({
        "events": s.events,
        "packets": s.status.iter().map(|(k, n)| (k.to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        "population": s.population,
        "closure": {
            "n": c.n, "closed": c.closed, "with_unattributed": c.with_unattributed, "unattributed_ns": c.unattributed_ns,
            "span_n": c.span_n, "span_closed": c.span_closed, "span_with_unattributed": c.span_with_unattributed,
            "span_unattributed_ns": c.span_unattributed_ns,
        },
        "dominant": s.dominant.iter().map(|(l, k, ns)| serde_json::json!({"layer": l, "component": k, "ns": ns})).collect::<Vec<_>>(),
        "windows": s.windows,
        "memory": s.memory,
        "rows": {"journeys": s.packets, "components": s.components, "layer_delays": s.layer_delays, "profiles": s.profiles, "sojourns": s.sojourns, "queues": s.queues, "tti": s.tti},
    });
    v.to_string()
}

/// Bytes of memory available to this process: the smaller of the system's available memory and
/// what its memory cgroup leaves (None when neither can be read).
#[pyfunction]
fn memory_available() -> Option<u64> {
    scout_analysis::mem::available()
}

/// Whether the attribution kernel reads `events` packet events in one pass (not in windows of
/// packets) within `memory` bytes (`None`: what is available; unknown: one pass).
#[pyfunction]
#[pyo3(signature = (events, memory=None))]
fn attribution_one_pass(events: u64, memory: Option<u64>) -> bool {
    memory
        .or_else(scout_analysis::mem::available)
        .is_none_or(|m| scout_analysis::mem::window_events(m, events).is_none())
}

/// The point, layer and component codes of the attribution kernel (checked against the relational
/// engine's by the tests).
#[pyfunction]
fn attribution_codes() -> (Vec<String>, Vec<String>, Vec<String>) {
    use scout_analysis::codes::*;
    let v = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
    (v(&POINTS), v(&LAYERS), v(&COMPONENTS))
}

/// The live view (`--live`): a local web page and a Prometheus `/metrics` endpoint over the
/// events of the run it is given to (`simulate`, `emulate`, `probe`: `live=`). Serves from
/// `LiveServer(addr)` until `close()` or garbage collection.
#[pyclass(frozen)]
struct LiveServer(scout_live::Server);

#[pymethods]
impl LiveServer {
    #[new]
    fn new(addr: &str) -> PyResult<Self> {
        scout_live::Server::start(addr, scout_live::Limits::default())
            .map(LiveServer)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The page's URL (`http://HOST:PORT/`); `/metrics` and `/live.json` beside it.
    #[getter]
    fn url(&self) -> String {
        self.0.url()
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LiveServer>()?;
    m.add_class::<Attribution>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_srsran, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_pcap, m)?)?;
    m.add_function(wrap_pyfunction!(probe, m)?)?;
    m.add_function(wrap_pyfunction!(attribute_start, m)?)?;
    m.add_function(wrap_pyfunction!(attribution_codes, m)?)?;
    m.add_function(wrap_pyfunction!(memory_available, m)?)?;
    m.add_function(wrap_pyfunction!(attribution_one_pass, m)?)?;
    m.add_function(wrap_pyfunction!(recover, m)?)?;
    m.add_function(wrap_pyfunction!(emulate_cleanup, m)?)?;
    m.add_function(wrap_pyfunction!(schema_version, m)?)?;
    m.add_function(wrap_pyfunction!(schema_enums, m)?)?;
    m.add_function(wrap_pyfunction!(schema_columns, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROBE_DEFAULT_TABLE_SETS", scout_probe::DEFAULT_TABLE_SETS)?;
    m.add("PROBE_WAYS", scout_probe::WAYS)?;
    Ok(())
}
