//! `traffic`: the generated sources, each expanded to one flow per UE it selects.

use serde::Deserialize;

use super::Invalid;

/// The ECN field a source's packets carry in their IP header (RFC 3168, RFC 9331): `not-ect`
/// (default), `ect1` (an L4S sender), `ect0` (a classic ECN sender).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnName {
    #[default]
    NotEct,
    Ect1,
    Ect0,
}

impl EcnName {
    /// The field's value: 0 Not-ECT, 1 ECT(1), 2 ECT(0).
    pub fn value(self) -> u8 {
        match self {
            EcnName::NotEct => 0,
            EcnName::Ect1 => 1,
            EcnName::Ect0 => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirName {
    Dl,
    Ul,
}

/// Which UEs a traffic entry applies to: an index, a list, or `all`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum UeSel {
    One(u32),
    Many(Vec<u32>),
    All(AllWord),
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllWord {
    All,
}

/// A period distribution for on/off sources.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "dist", rename_all = "lowercase")]
pub enum Period {
    Constant { mean_s: f64 },
    Exponential { mean_s: f64 },
    Pareto { mean_s: f64, shape: f64 },
    Lognormal { mean_s: f64, sigma: f64 },
}

/// One traffic source (expanded to one flow per selected UE).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "type", rename_all = "snake_case")]
pub enum TrafficSpec {
    /// UDP constant bit rate (an overload flood when the rate exceeds the cell).
    UdpCbr {
        ue: UeSel,
        dir: DirName,
        #[serde(default = "nine")]
        five_qi: u8,
        #[serde(default)]
        ecn: EcnName,
        rate_mbps: f64,
        #[serde(default = "default_size")]
        size_bytes: u32,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
    /// On/off source sending at `rate_mbps` during on periods.
    OnOff {
        ue: UeSel,
        dir: DirName,
        #[serde(default = "nine")]
        five_qi: u8,
        #[serde(default)]
        ecn: EcnName,
        rate_mbps: f64,
        #[serde(default = "default_size")]
        size_bytes: u32,
        on: Period,
        off: Period,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
    /// 3GPP TR 38.838 §5.1.1 generic video (XR) model: frames at `fps`, frame size truncated
    /// Gaussian (mean = rate / fps, STD 10.5 %, within [50 %, 150 %] of the mean), frame jitter
    /// truncated Gaussian (mean 0, STD 2 ms, within ±4 ms); frames split into `packet_bytes` packets.
    Video {
        ue: UeSel,
        dir: DirName,
        #[serde(default = "nine")]
        five_qi: u8,
        #[serde(default)]
        ecn: EcnName,
        rate_mbps: f64,
        #[serde(default = "default_fps")]
        fps: f64,
        #[serde(default = "default_size")]
        packet_bytes: u32,
        #[serde(default = "default_std")]
        size_std_frac: f64,
        #[serde(default = "default_jitter")]
        jitter_std_ms: f64,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
    /// A DL sender in the DN that adapts its rate (`crate::adaptive`): UDP Prague on the
    /// receiver's ECN feedback, the UE's ANBR recommendations, or the hybrid of the two (or none:
    /// `constant`); packets of `size_bytes` paced at the rate, or, with `video`, the TR 38.838
    /// generic video source whose encoder the rate drives.
    Adaptive {
        ue: UeSel,
        #[serde(default = "nine")]
        five_qi: u8,
        control: ControlName,
        #[serde(default = "default_size")]
        size_bytes: u32,
        #[serde(default)]
        video: Option<VideoSpec>,
        /// ANBR and hybrid: the receiving application queries the UE's modem this often while
        /// the sender runs below its cap (TS 38.321 §5.18.10; the bearer's
        /// `anbr.query_prohibit_ms` bounds it).
        #[serde(default)]
        query_ms: Option<f64>,
        /// The direction of the data: `dl` (a server in the DN sends to the UE) or `ul`.
        #[serde(default = "dl")]
        dir: DirName,
        /// Gandalf's compensation of the sender's delay samples from the UE's RAN feed (seed
        /// 004 §4.3): `none`, `retx` (retransmission events), `lowpass` (at the uplink buffer's
        /// period) or `all`.
        #[serde(default)]
        compensation: CompensationName,
        /// `fixed`: reports come `feedback_ms` after delivery; `model`: an acknowledgement per
        /// packet crosses the model back (for a DL flow through the UE's uplink buffer).
        #[serde(default)]
        feedback: FeedbackName,
        /// The acknowledgement's IP packet (`feedback: model`).
        #[serde(default = "default_ack_bytes")]
        ack_bytes: u32,
        /// The rate it starts at, and the most it sends.
        #[serde(default = "default_start_rate")]
        start_rate_mbps: f64,
        max_rate_mbps: f64,
        /// From a packet's delivery to its report (or an ANBR recommendation) at the sender.
        #[serde(default = "default_feedback_ms")]
        feedback_ms: f64,
        #[serde(default = "ect1")]
        ecn: EcnName,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
    /// FTP traffic model 3 (TR 36.889 §A.2.1.3; TR 38.802's evaluation traffic for "other
    /// users"): files of `file_bytes` (0.5 MB) arrive as a Poisson process of `files_per_s` per
    /// UE; each file is queued at its arrival, in `size_bytes` packets. The offered load is
    /// `files_per_s × file_bytes × 8` per UE.
    Ftp3 {
        ue: UeSel,
        dir: DirName,
        #[serde(default = "nine")]
        five_qi: u8,
        #[serde(default)]
        ecn: EcnName,
        files_per_s: f64,
        #[serde(default = "default_file_bytes")]
        file_bytes: u32,
        #[serde(default = "default_size")]
        size_bytes: u32,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
    /// ICMP-echo-like ping from the UE: a request up, the DN echoes it down; RTT samples are
    /// written as `app_rtt` control events.
    Ping {
        ue: UeSel,
        #[serde(default = "nine")]
        five_qi: u8,
        #[serde(default = "default_ping_interval")]
        interval_ms: f64,
        #[serde(default = "default_ping_size")]
        size_bytes: u32,
        #[serde(default)]
        start_s: f64,
        #[serde(default)]
        stop_s: Option<f64>,
    },
}

fn nine() -> u8 {
    9
}
fn default_start_rate() -> f64 {
    5.0
}
fn default_feedback_ms() -> f64 {
    10.0
}
fn ect1() -> EcnName {
    EcnName::Ect1
}

/// What an adaptive sender follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlName {
    Prague,
    Anbr,
    Hybrid,
    /// Nothing: `start_rate_mbps` throughout (the reference).
    Constant,
    /// Copa, delay-based (seed 004 §5.1).
    Copa,
    /// Google Congestion Control's delay-gradient estimator (seed 004 §5.3).
    Gcc,
}

/// Which of Gandalf's compensations an adaptive sender applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompensationName {
    #[default]
    None,
    /// Retransmission events taken out of the samples they inflated (§4.3.1).
    Retx,
    /// The RTT low-passed at the uplink buffer's period (§4.3.2).
    Lowpass,
    /// Both.
    All,
}

impl CompensationName {
    pub fn retx(self) -> bool {
        matches!(self, CompensationName::Retx | CompensationName::All)
    }

    pub fn lowpass(self) -> bool {
        matches!(self, CompensationName::Lowpass | CompensationName::All)
    }
}

/// How an adaptive sender hears back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedbackName {
    /// `feedback_ms` after each delivery.
    #[default]
    Fixed,
    /// An acknowledgement of `ack_bytes` per packet crosses the model in the other direction,
    /// then `feedback_ms` of wire.
    Model,
}

/// An adaptive sender's video shape (TR 38.838 §5.1.1).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoSpec {
    #[serde(default = "default_fps")]
    pub fps: f64,
    #[serde(default = "default_std")]
    pub size_std_frac: f64,
}
fn default_size() -> u32 {
    1400
}

/// TR 36.889 §A.2.1.3: FTP model 3's file size, 0.5 Mbyte.
fn default_file_bytes() -> u32 {
    500_000
}

fn default_ack_bytes() -> u32 {
    60
}

fn dl() -> DirName {
    DirName::Dl
}
fn default_fps() -> f64 {
    60.0
}
fn default_std() -> f64 {
    0.105
}
fn default_jitter() -> f64 {
    2.0
}
fn default_ping_interval() -> f64 {
    100.0
}
fn default_ping_size() -> u32 {
    84
}

/// The most packets one video frame may hold (they are queued at once).
pub const MAX_PACKETS_PER_FRAME: f64 = 100_000.0;

/// The shortest mean on period: each on period starts with a packet, so on and off periods of
/// nanoseconds once made a 30 Mbit/s source send a packet every 2 ns (the simulator never reached
/// its end). A millisecond is a slot or two.
pub const MIN_ON_S: f64 = 0.001;

/// An on or off period distribution: a finite mean from `min_mean_s` to a day, a Pareto shape
/// above 1 (a finite mean) and at most 100, a lognormal sigma from 0 to 10.
fn check_period(p: &Period, min_mean_s: f64) -> Result<(), String> {
    let mean = match p {
        Period::Constant { mean_s } | Period::Exponential { mean_s } => *mean_s,
        Period::Pareto { mean_s, shape } => {
            if !(*shape > 1.0 && *shape <= 100.0) {
                return Err(format!("shape {shape}; accepted: 1 < shape <= 100 (a finite mean)"));
            }
            *mean_s
        }
        Period::Lognormal { mean_s, sigma } => {
            if !(*sigma >= 0.0 && *sigma <= 10.0) {
                return Err(format!("sigma {sigma}; accepted: 0 <= sigma <= 10"));
            }
            *mean_s
        }
    };
    if !(mean >= min_mean_s && mean <= 86_400.0) {
        return Err(format!("mean_s {mean}; accepted: {min_mean_s} <= mean_s <= 86400"));
    }
    Ok(())
}

/// Each source's own values, then what every source shares (rate, packet size, start and stop,
/// its UEs); and all sources together under [`MAX_OFFERED_PPS`].
pub(super) fn check(traffic: &[TrafficSpec], nues: u64) -> Result<(), Invalid> {
    let mut offered_pps = 0.0;
    for (i, t) in traffic.iter().enumerate() {
        let key = |k: &str| format!("traffic[{i}].{k}");
        if let TrafficSpec::Ping { interval_ms, .. } = t {
            // A request and its reply per interval.
            offered_pps += 2.0 * 1000.0 / interval_ms.max(0.01);
        }
        let s = shape(t, &key)?;
        if !(s.rate_mbps > 0.0 && s.rate_mbps <= 100_000.0) {
            return Err((key("rate_mbps"), format!("{}; accepted: 0 < rate_mbps <= 100000", s.rate_mbps)));
        }
        if !(20..=9000).contains(&s.size_bytes) {
            return Err((key("size_bytes"), format!("{}; accepted: 20..=9000 (IP datagram bytes)", s.size_bytes)));
        }
        let (start, stop) = (s.start_s, s.stop_s);
        if !(start >= 0.0 && start.is_finite()) || stop.is_some_and(|e| !(e > start && e.is_finite())) {
            return Err((key("stop_s"), "must be after start_s; accepted: 0 <= start_s < stop_s, both finite".into()));
        }
        let ids: Vec<u32> = match s.ue {
            UeSel::One(u) => vec![*u],
            UeSel::Many(v) => v.clone(),
            UeSel::All(_) => vec![],
        };
        if let Some(bad) = ids.iter().find(|u| u64::from(**u) >= nues) {
            return Err((key("ue"), format!("UE {bad} does not exist; the scenario has UEs 0..{}", nues - 1)));
        }
        if !matches!(t, TrafficSpec::Ping { .. }) {
            let flows = if matches!(s.ue, UeSel::All(_)) { nues as f64 } else { ids.len() as f64 };
            offered_pps += flows * s.rate_mbps * 1e6 / 8.0 / f64::from(s.size_bytes);
        }
    }
    if offered_pps > MAX_OFFERED_PPS {
        return Err((
            "traffic".into(),
            format!(
                "{offered_pps:.3e} packets/s offered in all; accepted: at most {MAX_OFFERED_PPS:.0e} (about 120 Gbit/s of \
                 1500-byte packets, far beyond any cell: every packet costs the model about a microsecond)"
            ),
        ));
    }
    Ok(())
}

/// What the checks common to every source read of one: a ping's rate is nominal (1 Mbit/s), an
/// adaptive sender's is its cap, an FTP source's its mean offered load.
struct Shape<'a> {
    ue: &'a UeSel,
    rate_mbps: f64,
    size_bytes: u32,
    start_s: f64,
    stop_s: Option<f64>,
}

/// A source's own checks, and its [`Shape`].
fn shape<'a>(t: &'a TrafficSpec, key: &dyn Fn(&str) -> String) -> Result<Shape<'a>, Invalid> {
    let shape = |ue, rate_mbps, size_bytes, start_s, stop_s| Shape { ue, rate_mbps, size_bytes, start_s, stop_s };
    Ok(match t {
        TrafficSpec::UdpCbr { ue, rate_mbps, size_bytes, start_s, stop_s, .. } => {
            shape(ue, *rate_mbps, *size_bytes, *start_s, *stop_s)
        }
        TrafficSpec::OnOff { ue, rate_mbps, size_bytes, start_s, stop_s, on, off, .. } => {
            check_period(on, MIN_ON_S).map_err(|m| (key("on"), m))?;
            check_period(off, 0.0).map_err(|m| (key("off"), m))?;
            shape(ue, *rate_mbps, *size_bytes, *start_s, *stop_s)
        }
        TrafficSpec::Video {
            ue, rate_mbps, packet_bytes, start_s, stop_s, fps, size_std_frac, jitter_std_ms, ..
        } => {
            check_video(*rate_mbps, *fps, *packet_bytes, *size_std_frac, *jitter_std_ms, key)?;
            shape(ue, *rate_mbps, *packet_bytes, *start_s, *stop_s)
        }
        TrafficSpec::Adaptive {
            ue,
            start_rate_mbps,
            max_rate_mbps,
            feedback_ms,
            size_bytes,
            start_s,
            stop_s,
            video,
            query_ms,
            ack_bytes,
            ..
        } => {
            check_adaptive(*ack_bytes, *start_rate_mbps, *max_rate_mbps, *feedback_ms, *query_ms, video, key)?;
            shape(ue, *max_rate_mbps, *size_bytes, *start_s, *stop_s)
        }
        TrafficSpec::Ftp3 { ue, files_per_s, file_bytes, size_bytes, start_s, stop_s, .. } => {
            if !(*files_per_s > 0.0 && *files_per_s <= 10_000.0) {
                return Err((key("files_per_s"), format!("{files_per_s}; accepted: 0 < files_per_s <= 10000")));
            }
            // A file is queued at once: bounded like a video frame.
            if !(1..=200_000_000).contains(file_bytes)
                || f64::from(*file_bytes) / f64::from((*size_bytes).max(1)) > MAX_PACKETS_PER_FRAME
            {
                return Err((
                    key("file_bytes"),
                    format!(
                        "{file_bytes}; accepted: 1 to 200000000 bytes, at most {MAX_PACKETS_PER_FRAME} packets of size_bytes"
                    ),
                ));
            }
            shape(ue, files_per_s * f64::from(*file_bytes) * 8.0 / 1e6, *size_bytes, *start_s, *stop_s)
        }
        TrafficSpec::Ping { ue, interval_ms, size_bytes, start_s, stop_s, .. } => {
            // NaN fails every comparison: `!(x >= lo && x <= hi)` refuses it.
            if !(*interval_ms >= 0.01 && *interval_ms <= 3_600_000.0) {
                return Err((
                    key("interval_ms"),
                    format!("{interval_ms}; accepted: 0.01 <= interval_ms <= 3600000 (100 000 pings/s to one an hour)"),
                ));
            }
            shape(ue, 1.0, *size_bytes, *start_s, *stop_s)
        }
    })
}

/// A video source: its frame rate, jitter and size spread, and a frame's packets bounded (a frame
/// is queued at once, so that one frame cannot take the simulator's memory: 10^11 packets once
/// did).
fn check_video(
    rate_mbps: f64,
    fps: f64,
    packet_bytes: u32,
    size_std_frac: f64,
    jitter_std_ms: f64,
    key: &dyn Fn(&str) -> String,
) -> Result<(), Invalid> {
    if !(fps > 0.0 && fps <= 1000.0) {
        return Err((key("fps"), format!("{fps}; accepted: 0 < fps <= 1000")));
    }
    if !(0.0..=1000.0).contains(&jitter_std_ms) {
        return Err((key("jitter_std_ms"), format!("{jitter_std_ms}; accepted: 0 <= jitter_std_ms <= 1000")));
    }
    if !(0.0..=10.0).contains(&size_std_frac) {
        return Err((key("size_std_frac"), format!("{size_std_frac}; accepted: 0 <= size_std_frac <= 10")));
    }
    let per_frame = rate_mbps * 1e6 / 8.0 / fps / f64::from(packet_bytes.max(1));
    if per_frame > MAX_PACKETS_PER_FRAME {
        return Err((
            key("fps"),
            format!(
                "{rate_mbps} Mbit/s at {fps} frames/s in {packet_bytes}-byte packets is {per_frame:.0} packets a \
                 frame; accepted: at most {MAX_PACKETS_PER_FRAME} (a frame is queued at once): raise fps"
            ),
        ));
    }
    Ok(())
}

/// An adaptive sender: its acknowledgement size, start rate within its cap, feedback delay, ANBR
/// query period and video shape.
fn check_adaptive(
    ack_bytes: u32,
    start_rate_mbps: f64,
    max_rate_mbps: f64,
    feedback_ms: f64,
    query_ms: Option<f64>,
    video: &Option<VideoSpec>,
    key: &dyn Fn(&str) -> String,
) -> Result<(), Invalid> {
    if !(20..=9000).contains(&ack_bytes) {
        return Err((key("ack_bytes"), format!("{ack_bytes}; accepted: 20..=9000 (IP datagram bytes)")));
    }
    if !(start_rate_mbps > 0.0 && start_rate_mbps <= max_rate_mbps) {
        return Err((
            key("start_rate_mbps"),
            format!("{start_rate_mbps}; accepted: 0 < start_rate_mbps <= max_rate_mbps ({max_rate_mbps})"),
        ));
    }
    if !(0.0..=10_000.0).contains(&feedback_ms) {
        return Err((key("feedback_ms"), format!("{feedback_ms}; accepted: 0 <= feedback_ms <= 10000")));
    }
    if let Some(q) = query_ms {
        if !(1.0..=100_000.0).contains(&q) {
            return Err((key("query_ms"), format!("{q}; accepted: 1 <= query_ms <= 100000")));
        }
    }
    if let Some(v) = video {
        if !(v.fps >= 1.0 && v.fps <= 1000.0) {
            return Err((key("video.fps"), format!("{}; accepted: 1 <= fps <= 1000", v.fps)));
        }
        if !(v.size_std_frac >= 0.0 && v.size_std_frac <= 1.0) {
            return Err((
                key("video.size_std_frac"),
                format!("{}; accepted: 0 <= size_std_frac <= 1", v.size_std_frac),
            ));
        }
    }
    Ok(())
}

/// The most packets per second all traffic may offer. The model handles each packet at each layer
/// (about a microsecond in all); 818 UEs at 2 Tbit/s in all once made 20 ms of simulation take
/// longer than the fuzzer's 10 s.
pub const MAX_OFFERED_PPS: f64 = 1e7;
