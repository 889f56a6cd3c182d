//! Scout's simulator: drives the sans-IO model ([`scout_ran::stack::Stack`]) on a virtual nanosecond
//! clock with traffic generators, writing every event through the one writer
//! ([`scout_events::writer::RunWriter`]). Same scenario and seed ⇒ byte-identical event tables.

pub mod adaptive;
pub mod copa;
pub mod delays;
mod event_loop;
pub mod gandalf;
pub mod gcc;
pub mod radio;
pub mod replay;
pub mod scenario;
pub mod traffic;

use std::cmp::Reverse;

use std::ops::ControlFlow;
use std::path::Path;

use serde_json::{json, Value};

use scout_events::header::{self, Header};
use scout_events::writer::{RunWriter, WriteError};
use scout_events::{Dir, Sink};
use scout_ran::config::McsTableName;
use scout_ran::phy::channel::{logistic_sinr_for_efficiency_db, sinr_from_capacity_trace, SinrSource};
use scout_ran::phy::link::{self, BlerModel};
use scout_ran::phy::mcs::McsTable;
use scout_ran::rng::Rng;
use scout_ran::stack::{ConfigError, Stack, StackConfig, UeSpec};

use crate::adaptive::Adaptive;
use crate::delays::{percentiles, Delays};
use crate::event_loop::{deliver, feed_senders, first_packets, send_next, write_cc_samples, Measured};
use crate::scenario::{ControlName, DirName, Loaded, ScenarioError, TrafficSpec, UeSel};
use crate::traffic::{Gen, Source};

/// Anything that stops a simulation, each with a clear location.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{file}: {0}", file = .1)]
    Config(ConfigError, String),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{file}:{line}: {message}")]
    Trace { file: String, line: usize, message: String },
    /// The progress callback asked to stop (Ctrl-C, SIGTERM) at simulated time `at_ns`.
    #[error("interrupted at {:.3} s of simulated time", *at_ns as f64 / 1e9)]
    Interrupted { at_ns: i64 },
}

/// Overrides from the command line.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub seed: Option<u64>,
    pub duration_s: Option<f64>,
    pub sets: Vec<String>,
    /// A tap that sees every event as it is written (the live view, `scout-live`).
    pub live: Option<scout_events::tap::SharedTap>,
}

/// One expanded flow.
pub struct Flow {
    pub id: u32,
    pub kind: &'static str,
    pub ue: u32,
    pub dir: Dir,
    pub drb_idx: usize,
    pub five_qi: u8,
    /// The ECN field of its packets.
    pub ecn: u8,
    /// For ping: the flow id of the echo reply.
    pub reply: Option<u32>,
    /// For an adaptive sender whose acknowledgements ride the model: their flow id and size.
    pub ack: Option<(u32, u32)>,
}

/// What a run produced, for the summary and `run.json`.
pub struct Outcome {
    pub stats: scout_ran::stack::Stats,
    pub in_flight: u64,
    pub delays_ns: [Delays; 2],
    pub rtts_ns: Vec<i64>,
    pub duration_ns: i64,
    pub flows: Vec<Value>,
    pub cell: String,
    pub slices: Vec<String>,
    /// The modelled UEs' radio (`radio::describe`), empty without one.
    pub radio: Vec<Value>,
}

/// Reads a trace file named relative to the scenario; returns its path (for errors) and text.
fn read_trace(dir: &Path, rel: &str) -> Result<(String, String), SimError> {
    let path = dir.join(rel);
    let file = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| SimError::Trace {
        file: file.clone(),
        line: 0,
        message: e.to_string(),
    })?;
    Ok((file, text))
}

fn load_sinr_trace(dir: &Path, rel: &str) -> Result<(SinrSource, SinrSource), SimError> {
    let (file, text) = read_trace(dir, rel)?;
    let (mut dl, mut ul) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("time") {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |k: usize| -> Result<f64, SimError> {
            cols.get(k).and_then(|c| c.parse::<f64>().ok()).filter(|v| v.is_finite()).ok_or_else(|| SimError::Trace {
                file: file.clone(),
                line: i + 1,
                message: format!("expected `time_s,dl_sinr_db[,ul_sinr_db]` with numbers, got {line:?}"),
            })
        };
        let t = (num(0)? * 1e9) as i64;
        let d = num(1)?;
        let u = if cols.len() > 2 { num(2)? } else { d - 5.0 };
        if dl.last().is_some_and(|(lt, _)| *lt >= t) {
            return Err(SimError::Trace { file, line: i + 1, message: "times must increase".into() });
        }
        dl.push((t, d));
        ul.push((t, u));
    }
    if dl.is_empty() {
        return Err(SimError::Trace { file, line: 0, message: "no samples".into() });
    }
    Ok((SinrSource::Series(dl), SinrSource::Series(ul)))
}

/// Reads a mahimahi trace: one non-negative integer millisecond per line, non-decreasing.
fn load_mahimahi_trace(dir: &Path, rel: &str) -> Result<Vec<u64>, SimError> {
    let (file, text) = read_trace(dir, rel)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let t: u64 = line.parse().map_err(|_| SimError::Trace {
            file: file.clone(),
            line: i + 1,
            message: format!("expected a millisecond timestamp (non-negative integer), got {line:?}"),
        })?;
        if out.last().is_some_and(|l| *l > t) {
            return Err(SimError::Trace { file, line: i + 1, message: "timestamps must not decrease".into() });
        }
        out.push(t);
    }
    if out.is_empty() {
        return Err(SimError::Trace { file, line: 0, message: "no delivery opportunities".into() });
    }
    Ok(out)
}

/// Data resource elements per second the cell offers in each direction: PRBs × 12 subcarriers ×
/// (DL: symbols after the PDCCH; both: minus DMRS) × layers × the share of DL or UL symbols in the
/// duplex pattern (the same `Duplex::slot_kind` the model schedules with).
fn data_re_per_s(cell: &scout_ran::config::CellCfg) -> (f64, f64) {
    let mu = scout_ran::phy::mu_for_scs(cell.common_scs).unwrap_or(0);
    let prbs = f64::from(scout_ran::phy::nof_prbs(cell.channel_bandwidth_mhz, cell.common_scs).unwrap_or(0));
    let slots_per_s = 1e9 / scout_ran::phy::slot_ns(mu) as f64;
    let duplex = cell.duplex();
    let period = duplex.period();
    let (dl, ul) = (0..period)
        .map(|s| duplex.slot_kind(s))
        .fold((0u32, 0u32), |(d, u), k| (d + u32::from(k.dl_symbols), u + u32::from(k.ul_symbols)));
    let (dl_share, ul_share) = (f64::from(dl) / (period as f64 * 14.0), f64::from(ul) / (period as f64 * 14.0));
    let dl_sym = 14.0 - f64::from(cell.pdcch_symbols) - f64::from(cell.dmrs_symbols);
    let ul_sym = 14.0 - f64::from(cell.dmrs_symbols);
    let re = prbs * 12.0 * slots_per_s * f64::from(cell.layers.unwrap_or(1));
    (re * dl_sym * dl_share, re * ul_sym * ul_share)
}

/// The SINR (dB) at which error model `model` carries a spectral efficiency of `table` at BLER
/// `target` (OLLA's): where capacity traces and replayed MCSs without a recorded SINR map to.
fn sinr_for_efficiency(model: BlerModel, table: McsTable, target: f64) -> impl Fn(f64) -> f64 {
    move |se: f64| match model {
        BlerModel::Miesm => link::sinr_for_efficiency_db(table, se, target),
        BlerModel::Logistic => logistic_sinr_for_efficiency_db(se, target),
    }
}

/// Each UE of the scenario with its DL and UL channel: modelled links (TR 38.901), a replayed
/// recording, a SINR or capacity trace, or constant SINRs.
fn ue_specs(loaded: &Loaded, seed: u64) -> Result<Vec<UeSpec>, SimError> {
    let sc = &loaded.scenario;
    let slices: Vec<String> = sc.core.slices.iter().map(|s| s.name.clone()).collect();
    let mut ues = Vec::new();
    for (gi, g) in sc.ues.iter().enumerate() {
        let slice = g.slice.as_ref().and_then(|n| slices.iter().position(|s| s == n)).unwrap_or(0) as u8;
        let model = g.channel.model.as_deref();
        if let Some(m) = model.filter(|m| !matches!(*m, "constant" | "trace" | "replay") && !m.starts_with("tdl-")) {
            return Err(SimError::Scenario(ScenarioError::Key {
                file: loaded.file.clone(),
                key: format!("ues[{gi}].channel.model"),
                message: format!("{m:?}; accepted: constant, trace, tdl-a, tdl-b, tdl-c, tdl-d, tdl-e, replay"),
            }));
        }
        if model == Some("replay") {
            // A recorded run's radio (phy::replay).
            let key_error =
                |(key, message)| SimError::Scenario(ScenarioError::Key { file: loaded.file.clone(), key, message });
            let c = &sc.cell_cfg;
            let sinr_for = |d: Dir, m: u8| {
                let (table, target) = match d {
                    Dir::Dl => (c.pdsch.mcs_table, c.pdsch.olla_target_bler),
                    Dir::Ul => (c.pusch.mcs_table, c.pusch.olla_target_bler),
                };
                sinr_for_efficiency(c.bler_model, table.table(), target)(table.table().entry(m).spectral_efficiency())
            };
            let (dl, ul) = replay::links(g, gi, &loaded.dir, c, sinr_for).map_err(key_error)?;
            for _ in 0..g.count {
                ues.push(UeSpec { slice, dl_sinr: dl.clone(), ul_sinr: ul.clone(), five_qis: g.five_qis.clone() });
            }
            continue;
        }
        if radio::models_radio(g) || g.position.is_some() || g.distance_m.is_some() || g.mobility.is_some() {
            // TR 38.901 path loss, shadowing, fading and mobility: one link per UE and direction.
            let links = radio::links(g, gi, ues.len(), &sc.cell_cfg, seed).map_err(|(key, message)| {
                SimError::Scenario(ScenarioError::Key { file: loaded.file.clone(), key, message })
            })?;
            for (dl_sinr, ul_sinr) in links {
                ues.push(UeSpec { slice, dl_sinr, ul_sinr, five_qis: g.five_qis.clone() });
            }
            continue;
        }
        let (mut dl, mut ul) = match &g.channel.sinr_trace {
            Some(rel) => load_sinr_trace(&loaded.dir, rel)?,
            None => (SinrSource::Constant(g.channel.dl_sinr_db), SinrSource::Constant(g.channel.ul_sinr_db)),
        };
        if g.channel.sinr_trace.is_some() && g.channel.mahimahi_trace.is_some() {
            return Err(SimError::Scenario(ScenarioError::Key {
                file: loaded.file.clone(),
                key: "ues[].channel".into(),
                message: "both sinr_trace and mahimahi_trace are set; accepted: at most one DL trace".into(),
            }));
        }
        let (dl_re, ul_re) = data_re_per_s(&sc.cell_cfg);
        let w = g.channel.mahimahi_window_ms;
        // The SINR at which the scenario's error model carries a spectral efficiency at OLLA's target.
        let c = &sc.cell_cfg;
        let sinr_for_se = |table: McsTableName, target: f64| sinr_for_efficiency(c.bler_model, table.table(), target);
        if let Some(rel) = &g.channel.mahimahi_trace {
            let f = sinr_for_se(c.pdsch.mcs_table, c.pdsch.olla_target_bler);
            dl = SinrSource::Series(sinr_from_capacity_trace(&load_mahimahi_trace(&loaded.dir, rel)?, w, dl_re, f));
        }
        if let Some(rel) = &g.channel.mahimahi_ul_trace {
            let f = sinr_for_se(c.pusch.mcs_table, c.pusch.olla_target_bler);
            ul = SinrSource::Series(sinr_from_capacity_trace(&load_mahimahi_trace(&loaded.dir, rel)?, w, ul_re, f));
        }
        for _ in 0..g.count {
            ues.push(UeSpec { slice, dl_sinr: dl.clone(), ul_sinr: ul.clone(), five_qis: g.five_qis.clone() });
        }
    }
    Ok(ues)
}

/// Builds the stack and the flows of a loaded scenario for a run of `duration_s` (flows without a
/// `stop_s` send for the whole run).
pub fn build(loaded: &Loaded, seed: u64, duration_s: f64) -> Result<(Stack, Vec<Flow>, Vec<Source>), SimError> {
    let sc = &loaded.scenario;
    let ues = ue_specs(loaded, seed)?;
    let nues = ues.len() as u32;
    let cfg = StackConfig {
        cell: sc.cell_cfg.clone(),
        qos: sc.qos.clone(),
        cu_up: sc.cu_up.clone(),
        core: sc.core.clone(),
        ues,
        seed,
    };
    let mut stack = Stack::new(cfg).map_err(|e| SimError::Config(e, loaded.file.clone()))?;
    let mut flows = Vec::new();
    let mut sources = Vec::new();
    let dur_ns = (duration_s * 1e9) as i64;
    for (ti, t) in sc.traffic.iter().enumerate() {
        let (sel, five_qi, start_s, stop_s) = match t {
            TrafficSpec::UdpCbr { ue, five_qi, start_s, stop_s, .. }
            | TrafficSpec::OnOff { ue, five_qi, start_s, stop_s, .. }
            | TrafficSpec::Video { ue, five_qi, start_s, stop_s, .. }
            | TrafficSpec::Ftp3 { ue, five_qi, start_s, stop_s, .. }
            | TrafficSpec::Adaptive { ue, five_qi, start_s, stop_s, .. }
            | TrafficSpec::Ping { ue, five_qi, start_s, stop_s, .. } => (ue, *five_qi, *start_s, *stop_s),
        };
        let ecn = match t {
            TrafficSpec::UdpCbr { ecn, .. }
            | TrafficSpec::OnOff { ecn, .. }
            | TrafficSpec::Video { ecn, .. }
            | TrafficSpec::Ftp3 { ecn, .. }
            | TrafficSpec::Adaptive { ecn, .. } => ecn.value(),
            TrafficSpec::Ping { .. } => 0,
        };
        let ue_ids: Vec<u32> = match sel {
            UeSel::One(u) => vec![*u],
            UeSel::Many(v) => v.clone(),
            UeSel::All(_) => (0..nues).collect(),
        };
        for ue in ue_ids {
            let drb_idx = stack.drb_index(ue, five_qi).ok_or_else(|| {
                SimError::Scenario(ScenarioError::Key {
                    file: loaded.file.clone(),
                    key: format!("traffic[{ti}].five_qi"),
                    message: format!("UE {ue} has no DRB for 5QI {five_qi}; add it to the UE group's five_qis"),
                })
            })?;
            let start = (start_s * 1e9) as i64;
            let stop = stop_s.map_or(dur_ns, |s| (s * 1e9) as i64).min(dur_ns);
            let rng = Rng::new(seed, &format!("traffic{ti}.ue{ue}"));
            let id = flows.len() as u32;
            let (kind, dir, gen) = generator(t, &mut stack, start);
            let dir = if dir == DirName::Dl { Dir::Dl } else { Dir::Ul };
            let reply = matches!(t, TrafficSpec::Ping { .. }).then_some(id + 1);
            let ack = match t {
                TrafficSpec::Adaptive { feedback: scenario::FeedbackName::Model, ack_bytes, .. } => {
                    Some((id + 1, *ack_bytes))
                }
                _ => None,
            };
            flows.push(Flow { id, kind, ue, dir, drb_idx, five_qi, ecn, reply, ack });
            sources.push(Source::new(gen, start, stop, rng));
            // The reverse flows (echo replies, acknowledgements) are sent by the driver, not a source.
            let back = match (reply, ack) {
                (Some(r), _) => Some((r, "ping_reply")),
                (_, Some((a, _))) => Some((a, "ack")),
                _ => None,
            };
            if let Some((r, kind)) = back {
                let dir = if dir == Dir::Dl { Dir::Ul } else { Dir::Dl };
                flows.push(Flow { id: r, kind, ue, dir, drb_idx, five_qi, ecn: 0, reply: None, ack: None });
                sources.push(Source::new(Gen::Cbr { interval_ns: 1.0, size: 0, n: 0 }, 0, 0, Rng::new(seed, "unused")));
            }
        }
    }
    Ok((stack, flows, sources))
}

/// One flow's packet generator for traffic entry `t`, its kind (the `flows` entry's `type`) and
/// direction; an adaptive sender starting at `start` ns.
fn generator(t: &TrafficSpec, stack: &mut Stack, start: i64) -> (&'static str, DirName, Gen) {
    match t {
        TrafficSpec::UdpCbr { dir, rate_mbps, size_bytes, .. } => (
            "udp_cbr",
            *dir,
            Gen::Cbr { interval_ns: f64::from(*size_bytes) * 8.0 / rate_mbps * 1e3, size: *size_bytes, n: 0 },
        ),
        TrafficSpec::OnOff { dir, rate_mbps, size_bytes, on, off, .. } => (
            "on_off",
            *dir,
            Gen::OnOff {
                interval_ns: f64::from(*size_bytes) * 8.0 / rate_mbps * 1e3,
                size: *size_bytes,
                on: on.clone(),
                off: off.clone(),
                on_until: 0,
                next: 0,
            },
        ),
        TrafficSpec::Video { dir, rate_mbps, fps, packet_bytes, size_std_frac, jitter_std_ms, .. } => (
            "video",
            *dir,
            Gen::Video {
                frame_ns: 1e9 / fps,
                mean_frame: rate_mbps * 1e6 / 8.0 / fps,
                std_frac: *size_std_frac,
                jitter_std_ns: jitter_std_ms * 1e6,
                pkt: *packet_bytes,
                frame: 0,
                burst: Vec::new(),
            },
        ),
        TrafficSpec::Ftp3 { dir, files_per_s, file_bytes, size_bytes, .. } => (
            "ftp3",
            *dir,
            Gen::Ftp3 {
                mean_gap_s: 1.0 / files_per_s,
                file: *file_bytes,
                pkt: *size_bytes,
                next: None,
                burst: Vec::new(),
            },
        ),
        TrafficSpec::Adaptive { dir, .. } => {
            ("adaptive", *dir, Gen::Adaptive(Box::new(adaptive_sender(t, stack, start))))
        }
        TrafficSpec::Ping { interval_ms, size_bytes, .. } => {
            ("ping", DirName::Ul, Gen::Ping { interval_ns: interval_ms * 1e6, size: *size_bytes, n: 0 })
        }
    }
}

/// An adaptive sender as its traffic entry configures it: its control, video, ANBR queries and
/// Gandalf's compensations (which ask the stack to keep retransmission events, or read its
/// uplink buffer's period).
fn adaptive_sender(t: &TrafficSpec, stack: &mut Stack, start: i64) -> Adaptive {
    let TrafficSpec::Adaptive {
        control,
        size_bytes,
        start_rate_mbps,
        max_rate_mbps,
        feedback_ms,
        video,
        query_ms,
        compensation,
        ..
    } = t
    else {
        unreachable!("called for adaptive traffic only")
    };
    let control = match control {
        ControlName::Prague => adaptive::Control::Prague,
        ControlName::Anbr => adaptive::Control::Anbr,
        ControlName::Hybrid => adaptive::Control::Hybrid,
        ControlName::Constant => adaptive::Control::Constant,
        ControlName::Copa => adaptive::Control::Copa,
        ControlName::Gcc => adaptive::Control::Gcc,
    };
    let mut a = Adaptive::new(
        control,
        *size_bytes,
        start_rate_mbps * 1e6,
        max_rate_mbps * 1e6,
        (feedback_ms * 1e6) as i64,
        start,
    );
    if let Some(v) = video {
        a = a.with_video(adaptive::VideoShape { fps: v.fps, size_std_frac: v.size_std_frac });
    }
    if let Some(q) = query_ms {
        a = a.with_queries((q * 1e6) as i64);
    }
    if compensation.retx() {
        a = a.with_retx_compensation();
        stack.keep_retx_events();
    }
    if compensation.lowpass() {
        a = a.with_lowpass(stack.ul_buffer_period_ns());
    }
    // The delay-based senders' samples go into the run (`cc_sample`).
    a.recording()
}

/// How many steps of the event loop may pass between two calls of the progress callback: a
/// simulation that spends long in little simulated time (a heavy cell) still answers a stop
/// request within milliseconds.
const PROGRESS_EVERY_STEPS: u32 = 1 << 14;

/// Runs a loaded scenario into `sink`. `progress(fraction)` is called about every 1 % of sim time
/// and at least every [`PROGRESS_EVERY_STEPS`] steps; when it returns `Break` the run stops with
/// [`SimError::Interrupted`].
pub fn run<S: Sink>(
    loaded: &Loaded,
    seed: u64,
    duration_s: f64,
    sink: &mut S,
    progress: &mut dyn FnMut(f64) -> ControlFlow<()>,
) -> Result<Outcome, SimError> {
    if let Some(i) = loaded.scenario.core.slices.iter().position(|s| s.upf_process) {
        return Err(SimError::Scenario(ScenarioError::Key {
            file: loaded.file.clone(),
            key: format!("core.slices[{i}].upf_process"),
            message: "a real UPF process runs only in `scout emulate`; accepted here: false (the model's UPF stage)"
                .into(),
        }));
    }
    let (mut stack, flows, mut sources) = build(loaded, seed, duration_s)?;
    let end = (duration_s * 1e9) as i64;
    let mut heap = first_packets(&flows, &mut sources);
    let mut m = Measured::new();
    let step = (end / 100).max(1);
    let mut next_progress = step;
    let mut steps = 0u32;
    loop {
        let tg = heap.peek().map(|Reverse((t, _, _))| *t);
        let ts = stack.poll_timeout();
        let t = match (tg, ts) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        if t >= end {
            break;
        }
        steps += 1;
        if t >= next_progress || steps >= PROGRESS_EVERY_STEPS {
            steps = 0;
            if progress(t as f64 / end as f64).is_break() {
                return Err(SimError::Interrupted { at_ns: t });
            }
            write_cc_samples(&flows, &mut sources, sink);
            next_progress = (t / step + 1) * step;
        }
        if tg == Some(t) {
            send_next(&mut stack, &flows, &mut sources, &mut heap, &mut m, sink);
        } else {
            stack.handle_timeout(t, sink);
            feed_senders(&mut stack, &flows, &mut sources);
        }
        deliver(&mut stack, &flows, &mut sources, &mut m, sink);
    }
    let _ = progress(1.0);
    write_cc_samples(&flows, &mut sources, sink);
    let in_flight = stack.finish(end, sink);
    let flows_json = flows
        .iter()
        .map(|f| json!({"flow": f.id, "type": f.kind, "ue": f.ue, "dir": f.dir.as_str(), "five_qi": f.five_qi, "drb": f.drb_idx + 1}))
        .collect();
    Ok(Outcome {
        stats: stack.stats.clone(),
        in_flight,
        delays_ns: m.delays,
        rtts_ns: m.rtts,
        duration_ns: end,
        flows: flows_json,
        cell: stack.describe(),
        slices: loaded.scenario.core.slices.iter().map(|s| s.name.clone()).collect(),
        radio: radio::describe(&stack.sinr_sources(), end),
    })
}

/// The end-of-run summary (also merged into `run.json` under `summary` and `counts`).
pub fn summarize(o: &mut Outcome) -> Value {
    let s = &o.stats;
    let secs = o.duration_ns as f64 / 1e9;
    let mut drops = serde_json::Map::new();
    for ((layer, reason), (n, b)) in &s.drops {
        let e = drops.entry(layer.as_str().to_string()).or_insert_with(|| json!({}));
        e[reason.as_str()] = json!({"packets": n, "bytes": b});
    }
    let dir = |i: usize, name: &str, delays: &mut Delays| {
        json!({
            "dir": name,
            "offered_packets": s.offered_pkts[i],
            "offered_bytes": s.offered_bytes[i],
            "delivered_packets": s.delivered_pkts[i],
            "delivered_bytes": s.delivered_bytes[i],
            "throughput_mbps": s.delivered_bytes[i] as f64 * 8.0 / secs / 1e6,
            "delay": delays.summary(),
            "harq_tx": s.harq_tx[i],
            "harq_retx": s.harq_retx[i],
            "harq_failures": s.harq_fail[i],
        })
    };
    let [dl_del, ul_del] = &mut o.delays_ns;
    let dl = dir(0, "dl", dl_del);
    let ul = dir(1, "ul", ul_del);
    let total_drops: u64 = s.drops.values().map(|(n, _)| n).sum();
    json!({
        "duration_s": secs,
        "slots": s.slots,
        "directions": [dl, ul],
        "drops": drops,
        "dropped_packets": total_drops,
        "in_flight_packets": o.in_flight,
        "app_rtt": percentiles(&mut o.rtts_ns),
    })
}

/// What a model run adds to `run.json` at its end: the cell, the flows, the summary and the
/// counts (offered = delivered + dropped + in flight). The simulator and the emulator both write it.
pub fn closing(outcome: &mut Outcome) -> Value {
    let summary = summarize(outcome);
    let mut drops_by_layer = serde_json::Map::new();
    for ((layer, reason), (n, _)) in &outcome.stats.drops {
        let e = drops_by_layer.entry(layer.as_str().to_string()).or_insert_with(|| json!({}));
        e[reason.as_str()] = json!(n);
    }
    json!({
        "cell": serde_json::from_str::<Value>(&outcome.cell).unwrap_or(Value::Null),
        "radio": outcome.radio,
        "flows": outcome.flows,
        "summary": summary,
        "counts": {
            "drops": drops_by_layer,
            "skipped_inputs": {},
            "in_flight_packets": outcome.in_flight,
            "offered_packets": outcome.stats.offered_pkts.iter().sum::<u64>(),
            "delivered_packets": outcome.stats.delivered_pkts.iter().sum::<u64>(),
        },
    })
}

/// What a model run's `run.json` says first: the source, the scenario, seed and duration, the wall
/// clock at the start, the run's clock domain and the slices (the simulator and the emulator).
pub fn run_meta(loaded: &Loaded, source: header::Source, seed: u64, duration_s: f64, clock: Value) -> Value {
    let epoch =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let slices =
        loaded.scenario.core.slices.iter().map(|s| json!({"name": s.name, "sst": s.sst, "sd": s.sd})).collect();
    Header::new(source, epoch, vec![clock], slices).json(json!({
        "scenario": {"name": loaded.scenario.name, "file": loaded.file, "description": loaded.scenario.description, "resolved": loaded.resolved},
        "seed": seed,
        "duration_s": duration_s,
    }))
}

/// `scout simulate`: runs a scenario file into a new run directory and returns the summary.
pub fn simulate(
    scenario: &Path,
    out: &Path,
    opts: &RunOptions,
    progress: &mut dyn FnMut(f64) -> ControlFlow<()>,
) -> Result<Value, SimError> {
    let loaded = scenario::load(scenario, &opts.sets)?;
    let seed = opts.seed.unwrap_or(loaded.scenario.seed);
    let duration = opts.duration_s.unwrap_or(loaded.scenario.duration_s);
    if !(duration > 0.0 && duration <= 86_400.0) {
        return Err(SimError::Scenario(ScenarioError::Key {
            file: "--duration".into(),
            key: "duration".into(),
            message: format!("{duration}; accepted: 0 < duration <= 86400 s"),
        }));
    }
    // Validate fully before creating the run directory.
    build(&loaded, seed, duration)?;
    let meta = run_meta(
        &loaded,
        header::Source::Simulator,
        seed,
        duration,
        json!({"name": "sim", "offset_ns": 0, "note": "virtual clock; t_ns is exact model time"}),
    );
    let slices: Vec<String> = loaded.scenario.core.slices.iter().map(|s| s.name.clone()).collect();
    let mut writer = RunWriter::create(out, meta, &slices)?;
    if let Some(tap) = &opts.live {
        writer.set_tap(tap.clone());
    }
    let mut outcome = run(&loaded, seed, duration, &mut writer, progress)?;
    let mut extra = closing(&mut outcome);
    if !loaded.scenario.apps.is_empty() {
        extra["apps_not_run"] = json!({
            "count": loaded.scenario.apps.len(),
            "why": "the simulator runs no real applications: `scout emulate` does",
        });
    }
    let meta = writer.finish(extra)?;
    Ok(
        json!({"run": out.display().to_string(), "summary": meta["summary"], "events": meta["counts"]["events"], "apps_not_run": meta["apps_not_run"], "radio": meta["radio"]}),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use scout_events::Layer;

    use super::*;

    /// Executor, link and channel values the model cannot run are refused with their key (a
    /// service mean of 2.3e65 µs overflowed the clock: found by the fuzzer).
    #[test]
    fn model_values_beyond_what_it_can_run_are_refused() {
        let text =
            "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: udp_cbr, ue: 0, dir: ul, rate_mbps: 1}]\n";
        for (set, key) in [
            (
                "cu_up.gtpu_rx={workers: 2, service: {dist: lognormal, mean_us: 2.3e65, sigma: 0.8}}",
                "cu_up.gtpu_rx.service.mean_us",
            ),
            ("cu_up.cuup={workers: 0, service: {dist: constant, mean_us: 5}}", "cu_up.cuup.workers"),
            ("cu_up.f1u={workers: 1, service: {dist: lognormal, mean_us: 5, sigma: .nan}}", "cu_up.f1u.service.sigma"),
            ("core.n6.delay_us=.nan", "core.n6.delay_us"),
            ("core.n3.rate_mbps=-1", "core.n3.rate_mbps"),
            ("ues[0].channel.dl_sinr_db=.nan", "ues[0].channel.dl_sinr_db"),
            (
                "qos=[{five_qi: 9, rlc: {mode: am, am: {tx: {t-poll-retransmit: 0}}}}]",
                "qos[0].rlc.am.tx.t-poll-retransmit",
            ),
            ("qos=[{five_qi: 9, pdcp: {rx: {t_reordering: 9223372036854}}}]", "qos[0].pdcp.rx.t_reordering"),
            ("cell_cfg.mac_cell_group.bsr_cfg.retx_bsr_timer=0", "retx_bsr_timer"),
            ("cell_cfg.scheduler.pf_window_slots=.inf", "pf_window_slots"),
            ("cell_cfg.pdsch.harq_retx_delay_slots=0", "cell_cfg.pdsch.harq_retx_delay_slots"),
            ("cell_cfg.pusch.ul_sched_delay_slots=33", "cell_cfg.pusch.ul_sched_delay_slots"),
            ("cell_cfg.ul_common.max_pucchs_per_slot=0", "cell_cfg.ul_common.max_pucchs_per_slot"),
            ("qos=[{five_qi: 9, mac: {prioritized_bit_rate_kBps: 100}}]", "qos[0].mac.prioritized_bit_rate_kBps"),
            ("qos=[{five_qi: 9, mac: {bucket_size_duration_ms: 7}}]", "qos[0].mac.bucket_size_duration_ms"),
        ] {
            let (scenario, resolved) = scenario::parse(text, "s.yaml", &[set.into()]).expect("parses");
            let loaded = Loaded { scenario, dir: Default::default(), file: "s.yaml".into(), resolved };
            let e = build(&loaded, 1, 1.0).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("accepted"), "{set}: {e}");
        }
    }

    /// Hand-worked like the analysis kernel's test: 1..=10 has p50 5.5 and p90 9.1.
    #[test]
    fn summary_percentiles_interpolate_like_quantile_cont() {
        let p = percentiles(&mut (1..=10).rev().collect::<Vec<i64>>());
        assert_eq!(
            (p["p50_ns"].as_f64(), p["max_ns"].as_i64(), p["mean_ns"].as_f64()),
            (Some(5.5), Some(10), Some(5.5))
        );
        assert!((p["p90_ns"].as_f64().unwrap() - 9.1).abs() < 1e-9);
        assert_eq!(percentiles(&mut [7])["p99_ns"].as_f64(), Some(7.0));
    }

    /// `tdd_ul_dl_cfg.pattern2` (srsRAN's key) is read, checked on its own, and unknown keys in
    /// either period are refused.
    #[test]
    fn a_tdd_pattern2_is_read_and_checked() {
        let text =
            "name: t\nduration_s: 0.05\nues: [{count: 1}]\ntraffic: [{type: udp_cbr, ue: 0, dir: dl, rate_mbps: 1}]\n";
        let first = "dl_ul_tx_period: 5, nof_dl_slots: 3, nof_dl_symbols: 10, nof_ul_slots: 1, nof_ul_symbols: 2";
        for (p2, err) in [
            ("{dl_ul_tx_period: 5, nof_dl_slots: 2, nof_dl_symbols: 10, nof_ul_slots: 2, nof_ul_symbols: 2}", None),
            ("{dl_ul_tx_period: 5, nof_dl_slots: 2, nof_ul_slots: 4}", Some("pattern2: ")),
            ("{dl_ul_tx_period: 5, nof_dl_slots: 2, nof_ul_slots: 2, nof_ul_slot: 1}", Some("nof_ul_slot")),
        ] {
            let set = format!("cell_cfg.tdd_ul_dl_cfg={{{first}, pattern2: {p2}}}");
            let built =
                scenario::parse(text, "s.yaml", &[set]).map_err(|e| e.to_string()).and_then(|(scenario, resolved)| {
                    let loaded = Loaded { scenario, dir: Default::default(), file: "s.yaml".into(), resolved };
                    build(&loaded, 1, 1.0).map(|_| ()).map_err(|e| e.to_string())
                });
            match (built, err) {
                (Ok(()), None) => {}
                (Err(e), Some(want)) => assert!(e.contains(want), "{p2}: {e}"),
                (got, want) => panic!("{p2}: {got:?}, expected an error with {want:?}"),
            }
        }
    }

    /// An SR period of 2e9 ms passed validation and allocated a table of that many slots (8 GiB,
    /// issue 20): the model refuses what TS 38.331 cannot configure, naming the key.
    #[test]
    fn an_sr_period_longer_than_sl640_is_refused() {
        let text =
            "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: udp_cbr, ue: 0, dir: ul, rate_mbps: 1}]\n";
        // At μ1 (the default, 0.5 ms slots) sl640 is 320 ms.
        for (v, ok) in [("2e9", false), (".nan", false), ("0", false), ("321", false), ("320", true), ("20", true)] {
            let (scenario, resolved) =
                scenario::parse(text, "s.yaml", &[format!("cell_cfg.pucch.sr_period_ms={v}")]).expect("parses");
            let loaded = Loaded { scenario, dir: Default::default(), file: "s.yaml".into(), resolved };
            match build(&loaded, 1, 1.0) {
                Ok(_) => assert!(ok, "{v} was accepted"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!ok && e.contains("pucch.sr_period_ms") && e.contains("sl640"), "{v}: {e}");
                }
            }
        }
    }

    /// With `feedback: model` every delivered data packet is acknowledged at its delivery by an
    /// `ack_bytes` packet of the reverse flow, through the model: a DL flow's acknowledgements
    /// cross the UE's uplink (its buffer, SR and grants), so the sender's round trip holds the
    /// uplink's delay; and the senders' figures differ from a fixed feedback path's.
    #[test]
    fn acknowledgements_ride_the_model_back() {
        use scout_events::{Point, VecSink};
        let text = "name: t\nduration_s: 2\nues: [{count: 1, channel: {dl_sinr_db: 20, ul_sinr_db: 20}}]\n\
                    traffic: [{type: adaptive, ue: 0, control: copa, max_rate_mbps: 50, feedback: model, ack_bytes: 64}]\n";
        let run_with = |sets: &[&str]| {
            let (scenario, resolved) =
                scenario::parse(text, "s.yaml", &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                    .expect("parses");
            let loaded = Loaded { scenario, dir: Default::default(), file: "s.yaml".into(), resolved };
            let mut sink = VecSink::default();
            let o = run(&loaded, 1, 2.0, &mut sink, &mut |_| ControlFlow::Continue(())).expect("runs");
            (sink, o)
        };
        let (sink, o) = run_with(&[]);
        assert_eq!(o.flows[1]["type"], "ack");
        let app = |flow: u32, point: Point| {
            sink.packets.iter().filter(move |e| e.flow == flow && e.layer == Layer::App && e.point == point)
        };
        let delivered: Vec<i64> = app(0, Point::Deliver).map(|e| e.t_ns).collect();
        let acks: Vec<&scout_events::PacketEvent> = app(1, Point::Tx).collect();
        assert!(delivered.len() > 300, "{}", delivered.len());
        assert_eq!(acks.len(), delivered.len(), "one acknowledgement per delivered packet");
        assert!(acks.iter().zip(&delivered).all(|(a, &t)| a.t_ns == t && a.dir == Dir::Ul && a.bytes == 64));
        // The acknowledgements' one-way delay is the uplink's.
        let sent: HashMap<u64, i64> = acks.iter().map(|a| (a.pkt, a.t_ns)).collect();
        // At best the next UL slot of a grant already given; typically an SR's wait first.
        let mut back: Vec<i64> = app(1, Point::Deliver).map(|e| e.t_ns - sent[&e.pkt]).collect();
        back.sort_unstable();
        assert!(back.len() + 10 >= acks.len() && back[0] >= 500_000, "{:?}", back.first());
        assert!(back[back.len() / 2] >= 2_000_000, "median {}", back[back.len() / 2]);
        let (fixed, _) = run_with(&["traffic[0].feedback=fixed"]);
        assert!(fixed.packets.iter().all(|e| e.flow == 0), "a fixed feedback path sends nothing back");
    }
}
