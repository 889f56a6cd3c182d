//! Scenario files: YAML with srsRAN `gnb.yaml` key names for RAN parameters, Scout's own sections
//! for the core, the CU-UP executors, the UEs and the traffic. Unknown keys are errors naming the
//! key path and the accepted keys; `--set key=value` overrides are applied before validation.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml::Value;

use scout_ran::config::{CellCfg, ChannelCfg, CoreCfg, CuUpCfg, QosCfg};

/// A scenario error: which file, which key, what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {key}: {message}")]
    Key { file: String, key: String, message: String },
    #[error("{file}: YAML syntax error: {message}")]
    Syntax { file: String, message: String },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated time in seconds (traffic may stop earlier; the rest is the drain).
    pub duration_s: f64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub cell_cfg: CellCfg,
    #[serde(default)]
    pub qos: Vec<QosCfg>,
    #[serde(default)]
    pub cu_up: CuUpCfg,
    #[serde(default)]
    pub core: CoreCfg,
    pub ues: Vec<UeGroup>,
    /// Generated traffic (none: an idle cell, or the emulator's real applications only).
    #[serde(default)]
    pub traffic: Vec<TrafficSpec>,
    /// Real applications, started by the emulator (`scout emulate`); the simulator has none to
    /// run and says so.
    #[serde(default)]
    pub apps: Vec<AppSpec>,
    /// The emulator's QoS rules: which DRB a real packet rides (the simulator's traffic names its
    /// 5QI itself).
    #[serde(default)]
    pub qos_rules: Vec<QosRule>,
}

/// A QoS rule with one packet filter (TS 24.501 §9.11.4.13, components of Table 9.11.4.13.1):
/// a packet of a UE matches when every component given matches, seen from the UE (local: the
/// UE's side; remote: the other end). Rules are tried in order (their precedence); the first that
/// matches and names a 5QI the UE has a DRB for picks that DRB; a packet no rule matches rides
/// the UE's first DRB (the default QoS rule).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QosRule {
    pub five_qi: u8,
    /// `tcp`, `udp`, `icmp` (ICMP and ICMPv6), or any protocol when absent.
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub local_port: Option<u16>,
    #[serde(default)]
    pub remote_port: Option<u16>,
    /// The remote address as `ADDR/PREFIX` (IPv4 or IPv6), or one address.
    #[serde(default)]
    pub remote: Option<String>,
}

/// The protocol numbers a [`QosRule`] `protocol` stands for.
pub fn rule_protocols(name: &str) -> Option<&'static [u8]> {
    match name {
        "tcp" => Some(&[6]),
        "udp" => Some(&[17]),
        "icmp" => Some(&[1, 58]),
        _ => None,
    }
}

/// A [`QosRule`] `remote`: the network and prefix length.
pub fn parse_prefix(text: &str) -> Option<(std::net::IpAddr, u8)> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a.parse::<std::net::IpAddr>().ok()?, Some(l.parse::<u8>().ok()?)),
        None => (text.parse().ok()?, None),
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = len.unwrap_or(max);
    (len <= max).then_some((addr, len))
}

/// A command the emulator starts in a namespace (`dn`, or `ue<N>`) at `at_s` seconds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Names its output files (default: the command's first word and its index).
    #[serde(default)]
    pub name: Option<String>,
    pub ns: String,
    #[serde(default)]
    pub at_s: f64,
    /// Run with `sh -c`, with `$SCOUT_DN` and `$SCOUT_UE` set to the DN's and this UE's address.
    pub cmd: String,
}

impl AppSpec {
    /// The UE whose namespace it runs in (`None`: the DN's).
    pub fn ue(&self) -> Option<u32> {
        self.ns.strip_prefix("ue").and_then(|n| n.parse().ok())
    }
}

fn default_seed() -> u64 {
    1
}

/// `count` identical UEs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeGroup {
    #[serde(default = "one")]
    pub count: u32,
    /// Slice name from `core.slices` (the first slice by default).
    #[serde(default)]
    pub slice: Option<String>,
    /// 5QIs of the UE's DRBs (default [9]).
    #[serde(default = "default_5qis")]
    pub five_qis: Vec<u8>,
    #[serde(default)]
    pub channel: ChannelCfg,
    /// Where the group's UEs are, metres from the gNB at the origin: one `[x, y]` for every UE of
    /// the group, or (`distance_m`) each UE at a seeded angle and a distance — a number, or
    /// `[min, max]` spread evenly over the group. Needs `channel.pathloss`.
    #[serde(default)]
    pub position: Option<[f64; 2]>,
    #[serde(default)]
    pub distance_m: Option<DistanceSpec>,
    /// How they move (default static; `linear` when `channel.speed_kmh` > 0).
    #[serde(default)]
    pub mobility: Option<MobilityCfg>,
}

/// A distance, or a `[min, max]` range.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum DistanceSpec {
    One(f64),
    Range(Vec<f64>),
}

/// `ues[].mobility`: `model` `static`, `linear` (`heading_deg`) or `random_waypoint` (`area_m`:
/// `[x0, y0, x1, y1]`, `pause_s`); the speed is `channel.speed_kmh`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MobilityCfg {
    pub model: String,
    #[serde(default)]
    pub heading_deg: f64,
    #[serde(default)]
    pub area_m: Option<[f64; 4]>,
    #[serde(default)]
    pub pause_s: f64,
}

fn one() -> u32 {
    1
}

fn default_5qis() -> Vec<u8> {
    vec![9]
}

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

/// A scenario loaded from a file, with its directory (for relative paths) and its resolved text.
pub struct Loaded {
    pub scenario: Scenario,
    pub dir: PathBuf,
    pub file: String,
    /// The scenario after `--set` overrides, as YAML.
    pub resolved: Value,
}

/// Applies `key.path[2].x=value` to a YAML tree; the value is parsed as YAML (so `1`, `true`,
/// `[1,2]` and `{a: 1}` keep their types).
pub fn apply_set(root: &mut Value, assignment: &str) -> Result<(), String> {
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| format!("--set {assignment:?}: expected key=value, e.g. cell_cfg.common_scs=30"))?;
    let value: Value =
        serde_yaml::from_str(raw).map_err(|e| format!("--set {path}: value {raw:?} is not YAML: {e}"))?;
    let mut cur = root;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => {
                let idx = rest
                    .strip_suffix(']')
                    .and_then(|s| s.parse::<usize>().ok())
                    .ok_or_else(|| format!("--set {path}: bad index in {part:?}; use name[0]"))?;
                (n, Some(idx))
            }
            None => (*part, None),
        };
        if !cur.is_mapping() {
            *cur = Value::Mapping(Default::default());
        }
        let map = cur.as_mapping_mut().expect("made a mapping above");
        let key = Value::String(name.to_string());
        if !map.contains_key(&key) {
            map.insert(key.clone(), if index.is_some() { Value::Sequence(vec![]) } else { Value::Null });
        }
        cur = map.get_mut(&key).expect("inserted above");
        if let Some(idx) = index {
            let seq = cur.as_sequence_mut().ok_or_else(|| format!("--set {path}: {name} is not a list"))?;
            if idx >= seq.len() {
                return Err(format!("--set {path}: {name} has {} entries; index {idx} is out of range", seq.len()));
            }
            cur = &mut seq[idx];
        }
        if i == parts.len() - 1 {
            *cur = value.clone();
        }
    }
    Ok(())
}

/// Parses scenario text, applying overrides; errors name the file and key path.
pub fn parse(text: &str, file: &str, sets: &[String]) -> Result<(Scenario, Value), ScenarioError> {
    check_flow_depth(text).map_err(|message| ScenarioError::Syntax { file: file.into(), message })?;
    let mut root: Value =
        serde_yaml::from_str(text).map_err(|e| ScenarioError::Syntax { file: file.into(), message: e.to_string() })?;
    for s in sets {
        apply_set(&mut root, s).map_err(|m| ScenarioError::Key {
            file: file.into(),
            key: "--set".into(),
            message: m,
        })?;
    }
    let de = root.clone();
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        ScenarioError::Key {
            file: file.into(),
            key: if key == "." { "(top level)".into() } else { key },
            message: e.into_inner().to_string(),
        }
    })?;
    validate(&scenario).map_err(|(key, message)| ScenarioError::Key { file: file.into(), key, message })?;
    Ok((scenario, root))
}

/// Loads a scenario file.
pub fn load(path: &Path, sets: &[String]) -> Result<Loaded, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read { file: file.clone(), source })?;
    let (scenario, resolved) = parse(&text, &file, sets)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Loaded { scenario, dir, file, resolved })
}

/// The most DRBs a UE may have (TS 38.331 maxDRB).
pub const MAX_DRBS: usize = 29;

/// The most packets one video frame may hold (they are queued at once).
pub const MAX_PACKETS_PER_FRAME: f64 = 100_000.0;

/// The deepest `[`/`{` nesting a scenario may have. Scenarios nest a few levels; the YAML parser
/// takes time quadratic in the depth before it refuses a deep one (22 s for 100 000 levels), so
/// this linear scan refuses it first.
pub const MAX_FLOW_DEPTH: usize = 64;

/// Refuses flow collections nested deeper than [`MAX_FLOW_DEPTH`], naming the line and column;
/// brackets inside quoted strings and comments do not count.
fn check_flow_depth(text: &str) -> Result<(), String> {
    let (mut depth, mut quote, mut comment) = (0usize, None::<char>, false);
    let mut prev = '\n';
    let mut chars = text.chars().peekable();
    let (mut line, mut col) = (1usize, 0usize);
    while let Some(c) = chars.next() {
        col += 1;
        if c == '\n' {
            // (A quoted scalar may span lines: it still ends at its closing quote.)
            (line, col, comment) = (line + 1, 0, false);
        } else if comment {
            // Up to the end of the line.
        } else if let Some(q) = quote {
            if q == '"' && c == '\\' {
                chars.next();
                col += 1;
            } else if c == q {
                if q == '\'' && chars.peek() == Some(&'\'') {
                    chars.next(); // '' is a quote inside a single-quoted scalar
                    col += 1;
                } else {
                    quote = None;
                }
            }
        } else if c == '#' && (prev.is_whitespace() || prev == '\n') {
            comment = true;
        } else if c == '"' || c == '\'' {
            quote = Some(c);
        } else if c == '[' || c == '{' {
            depth += 1;
            if depth > MAX_FLOW_DEPTH {
                return Err(format!(
                    "line {line} column {col}: collections nested more than {MAX_FLOW_DEPTH} deep; accepted: at \
                     most {MAX_FLOW_DEPTH} (a scenario nests a few levels)"
                ));
            }
        } else if c == ']' || c == '}' {
            depth = depth.saturating_sub(1);
        }
        prev = c;
    }
    Ok(())
}

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

fn validate(s: &Scenario) -> Result<(), (String, String)> {
    if !(s.duration_s > 0.0 && s.duration_s <= 86_400.0) {
        return Err(("duration_s".into(), format!("{}; accepted: 0 < duration_s <= 86400", s.duration_s)));
    }
    if s.ues.is_empty() {
        return Err(("ues".into(), "at least one UE group is needed".into()));
    }
    let nues: u64 = s.ues.iter().map(|g| u64::from(g.count)).sum();
    if nues == 0 || nues > 1024 {
        return Err(("ues".into(), format!("{nues} UEs in total; accepted: 1..=1024")));
    }
    for (i, a) in s.apps.iter().enumerate() {
        let key = |k: &str| format!("apps[{i}].{k}");
        if a.ns != "dn" && a.ue().is_none_or(|u| u64::from(u) >= nues) {
            return Err((key("ns"), format!("{:?}; accepted: dn, or ue0..ue{} (one per UE)", a.ns, nues - 1)));
        }
        if !(a.at_s.is_finite() && a.at_s >= 0.0) {
            return Err((key("at_s"), format!("{}; accepted: a time >= 0 s", a.at_s)));
        }
        if a.cmd.trim().is_empty() {
            return Err((key("cmd"), "empty; accepted: a shell command".into()));
        }
    }
    for (i, r) in s.qos_rules.iter().enumerate() {
        let key = |k: &str| format!("qos_rules[{i}].{k}");
        if !s.ues.iter().any(|g| g.five_qis.contains(&r.five_qi)) {
            let all: std::collections::BTreeSet<u8> = s.ues.iter().flat_map(|g| g.five_qis.iter().copied()).collect();
            return Err((
                key("five_qi"),
                format!("{}: no UE has a DRB for it; accepted: a 5QI of a UE group's five_qis ({all:?})", r.five_qi),
            ));
        }
        if let Some(p) = &r.protocol {
            if rule_protocols(p).is_none() {
                return Err((key("protocol"), format!("{p:?}; accepted: tcp, udp, icmp")));
            }
        }
        if let Some(a) = &r.remote {
            if parse_prefix(a).is_none() {
                return Err((
                    key("remote"),
                    format!("{a:?}; accepted: an IPv4 or IPv6 address, optionally /PREFIX (≤ 32 or ≤ 128)"),
                ));
            }
        }
        if (r.local_port.is_some() || r.remote_port.is_some()) && r.protocol.as_deref().is_some_and(|p| p == "icmp") {
            return Err((key("protocol"), "icmp has no ports; accepted: tcp or udp with ports".into()));
        }
    }
    let slices: Vec<&str> = s.core.slices.iter().map(|x| x.name.as_str()).collect();
    for (i, g) in s.ues.iter().enumerate() {
        if !(1..=60_000).contains(&g.channel.mahimahi_window_ms) {
            return Err((
                format!("ues[{i}].channel.mahimahi_window_ms"),
                format!("{}; accepted: 1..=60000 ms", g.channel.mahimahi_window_ms),
            ));
        }
        if let Some(name) = &g.slice {
            if !slices.contains(&name.as_str()) {
                return Err((
                    format!("ues[{i}].slice"),
                    format!("{name:?} is not in core.slices; accepted: {slices:?}"),
                ));
            }
        }
        if g.five_qis.is_empty() {
            return Err((format!("ues[{i}].five_qis"), "at least one 5QI is needed".into()));
        }
        // One DRB per 5QI: a UE has at most maxDRB = 29 (TS 38.331 §6.4); DRB ids once wrapped
        // as u8 past 255.
        if g.five_qis.len() > MAX_DRBS {
            return Err((
                format!("ues[{i}].five_qis"),
                format!("{} 5QIs, one DRB each; accepted: 1..={MAX_DRBS} (maxDRB, TS 38.331 §6.4)", g.five_qis.len()),
            ));
        }
    }
    // Packets per second offered by all flows, against MAX_OFFERED_PPS.
    let mut offered_pps = 0.0;
    for (i, t) in s.traffic.iter().enumerate() {
        let key = |k: &str| format!("traffic[{i}].{k}");
        if let TrafficSpec::Ping { interval_ms, .. } = t {
            // A request and its reply per interval.
            offered_pps += 2.0 * 1000.0 / interval_ms.max(0.01);
        }
        let (ue, rate, size, start, stop) = match t {
            TrafficSpec::UdpCbr { ue, rate_mbps, size_bytes, start_s, stop_s, .. } => {
                (ue, *rate_mbps, *size_bytes, *start_s, *stop_s)
            }
            TrafficSpec::OnOff { ue, rate_mbps, size_bytes, start_s, stop_s, on, off, .. } => {
                check_period(on, MIN_ON_S).map_err(|m| (key("on"), m))?;
                check_period(off, 0.0).map_err(|m| (key("off"), m))?;
                (ue, *rate_mbps, *size_bytes, *start_s, *stop_s)
            }
            TrafficSpec::Video {
                ue,
                rate_mbps,
                packet_bytes,
                start_s,
                stop_s,
                fps,
                size_std_frac,
                jitter_std_ms,
                ..
            } => {
                if !(*fps > 0.0 && *fps <= 1000.0) {
                    return Err((key("fps"), format!("{fps}; accepted: 0 < fps <= 1000")));
                }
                if !(*jitter_std_ms >= 0.0 && *jitter_std_ms <= 1000.0) {
                    return Err((
                        key("jitter_std_ms"),
                        format!("{jitter_std_ms}; accepted: 0 <= jitter_std_ms <= 1000"),
                    ));
                }
                if !(*size_std_frac >= 0.0 && *size_std_frac <= 10.0) {
                    return Err((key("size_std_frac"), format!("{size_std_frac}; accepted: 0 <= size_std_frac <= 10")));
                }
                // A frame's packets are queued at once: bounded, so that one frame cannot take the
                // simulator's memory (10^11 packets once did).
                let per_frame = rate_mbps * 1e6 / 8.0 / fps / f64::from((*packet_bytes).max(1));
                if per_frame > MAX_PACKETS_PER_FRAME {
                    return Err((
                        key("fps"),
                        format!(
                            "{rate_mbps} Mbit/s at {fps} frames/s in {packet_bytes}-byte packets is {per_frame:.0} packets a \
                             frame; accepted: at most {MAX_PACKETS_PER_FRAME} (a frame is queued at once): raise fps"
                        ),
                    ));
                }
                (ue, *rate_mbps, *packet_bytes, *start_s, *stop_s)
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
                if !(20..=9000).contains(ack_bytes) {
                    return Err((key("ack_bytes"), format!("{ack_bytes}; accepted: 20..=9000 (IP datagram bytes)")));
                }
                if !(*start_rate_mbps > 0.0 && start_rate_mbps <= max_rate_mbps) {
                    return Err((
                        key("start_rate_mbps"),
                        format!("{start_rate_mbps}; accepted: 0 < start_rate_mbps <= max_rate_mbps ({max_rate_mbps})"),
                    ));
                }
                if !(*feedback_ms >= 0.0 && *feedback_ms <= 10_000.0) {
                    return Err((key("feedback_ms"), format!("{feedback_ms}; accepted: 0 <= feedback_ms <= 10000")));
                }
                if let Some(q) = query_ms {
                    if !(*q >= 1.0 && *q <= 100_000.0) {
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
                (ue, *max_rate_mbps, *size_bytes, *start_s, *stop_s)
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
                (ue, files_per_s * f64::from(*file_bytes) * 8.0 / 1e6, *size_bytes, *start_s, *stop_s)
            }
            TrafficSpec::Ping { ue, interval_ms, size_bytes, start_s, stop_s, .. } => {
                // NaN fails every comparison: `!(x >= lo && x <= hi)` refuses it.
                if !(*interval_ms >= 0.01 && *interval_ms <= 3_600_000.0) {
                    return Err((
                        key("interval_ms"),
                        format!(
                            "{interval_ms}; accepted: 0.01 <= interval_ms <= 3600000 (100 000 pings/s to one an hour)"
                        ),
                    ));
                }
                (ue, 1.0, *size_bytes, *start_s, *stop_s)
            }
        };
        if !(rate > 0.0 && rate <= 100_000.0) {
            return Err((key("rate_mbps"), format!("{rate}; accepted: 0 < rate_mbps <= 100000")));
        }
        if !(20..=9000).contains(&size) {
            return Err((key("size_bytes"), format!("{size}; accepted: 20..=9000 (IP datagram bytes)")));
        }
        if !(start >= 0.0 && start.is_finite()) || stop.is_some_and(|e| !(e > start && e.is_finite())) {
            return Err((key("stop_s"), "must be after start_s; accepted: 0 <= start_s < stop_s, both finite".into()));
        }
        let ids: Vec<u32> = match ue {
            UeSel::One(u) => vec![*u],
            UeSel::Many(v) => v.clone(),
            UeSel::All(_) => vec![],
        };
        if let Some(bad) = ids.iter().find(|u| u64::from(**u) >= nues) {
            return Err((key("ue"), format!("UE {bad} does not exist; the scenario has UEs 0..{}", nues - 1)));
        }
        if !matches!(t, TrafficSpec::Ping { .. }) {
            let flows = if matches!(ue, UeSel::All(_)) { nues as f64 } else { ids.len() as f64 };
            offered_pps += flows * rate * 1e6 / 8.0 / f64::from(size);
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

/// The most packets per second all traffic may offer. The model handles each packet at each layer
/// (about a microsecond in all); 818 UEs at 2 Tbit/s in all once made 20 ms of simulation take
/// longer than the fuzzer's 10 s.
pub const MAX_OFFERED_PPS: f64 = 1e7;

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str =
        "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: udp_cbr, ue: 0, dir: dl, rate_mbps: 1}]\n";

    #[test]
    fn unknown_key_names_path_and_accepted_keys() {
        let text = MIN.to_string() + "cell_cfg: {pdsch: {mcs_tabel: qam64}}\n";
        let e = parse(&text, "s.yaml", &[]).unwrap_err().to_string();
        assert!(e.contains("s.yaml: cell_cfg.pdsch"), "{e}");
        assert!(e.contains("mcs_tabel") && e.contains("mcs_table"), "{e}");
    }

    #[test]
    fn bad_enum_value_lists_variants() {
        let e = parse(MIN, "s.yaml", &["cell_cfg.scheduler.policy=fastest".into()]).unwrap_err().to_string();
        assert!(e.contains("cell_cfg.scheduler.policy") && e.contains("time_rr"), "{e}");
    }

    /// Values that passed validation once and then hung, panicked or exhausted memory (issue 20).
    #[test]
    fn values_that_cannot_run_are_refused_with_the_accepted_range() {
        let video =
            "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: video, ue: 0, dir: dl, rate_mbps: 5}]\n";
        let ping = "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: ping, ue: 0}]\n";
        let onoff =
            "name: t\nduration_s: 1\nues: [{count: 1}]\ntraffic: [{type: on_off, ue: 0, dir: dl, rate_mbps: 30, \
                     on: {dist: exponential, mean_s: 0.1}, off: {dist: exponential, mean_s: 0.1}}]\n";
        for (text, set, key) in [
            // Periods of nanoseconds sent a packet every 2 ns, for ever (found by the fuzzer).
            (onoff, "traffic[0].on={dist: pareto, mean_s: 5e-46, shape: 1.5}", "traffic[0].on"),
            (onoff, "traffic[0].off.mean_s=-1", "traffic[0].off"),
            // 818 UEs at 2145 Mbit/s each (found by the fuzzer: 20 ms took more than 10 s).
            (
                &MIN.replace("ue: 0", "ue: all").replace("rate_mbps: 1", "rate_mbps: 2145"),
                "ues=[{count: 818}]",
                "packets/s offered",
            ),
            (onoff, "traffic[0].off.mean_s=.nan", "traffic[0].off"),
            (onoff, "traffic[0].on={dist: pareto, mean_s: 1, shape: 1}", "shape"),
            (onoff, "traffic[0].on={dist: lognormal, mean_s: 1, sigma: .inf}", "sigma"),
            (ping, "traffic[0].interval_ms=.nan", "interval_ms"),
            (ping, "traffic[0].interval_ms=0", "interval_ms"),
            (video, "traffic[0].jitter_std_ms=-1", "jitter_std_ms"),
            (video, "traffic[0].jitter_std_ms=.nan", "jitter_std_ms"),
            (video, "traffic[0].size_std_frac=.nan", "size_std_frac"),
            (video, "traffic[0].rate_mbps=90000", "fps"),
            (MIN, "traffic[0].start_s=.inf", "stop_s"),
            (MIN, &format!("ues[0].five_qis=[{}]", vec!["9"; 30].join(",")), "five_qis"),
            // QoS rules (the emulator's): a 5QI no UE has, unknown protocol, a bad prefix.
            (MIN, "qos_rules=[{five_qi: 1}]", "qos_rules[0].five_qi"),
            (MIN, "qos_rules=[{five_qi: 9, protocol: sctp}]", "qos_rules[0].protocol"),
            (MIN, "qos_rules=[{five_qi: 9, remote: 10.0.0.0/33}]", "qos_rules[0].remote"),
            (MIN, "qos_rules=[{five_qi: 9, protocol: icmp, remote_port: 5}]", "qos_rules[0].protocol"),
        ] {
            let e = parse(text, "s.yaml", &[set.into()]).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("accepted"), "{set}: {e}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_at_once_with_its_position() {
        let text = format!("{MIN}x: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let t = std::time::Instant::now();
        let e = parse(&text, "s.yaml", &[]).unwrap_err().to_string();
        assert!(e.contains("line 5 column 68") && e.contains("nested more than 64"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "{:?}", t.elapsed());
        // Brackets in quotes and comments are not nesting.
        let quoted = format!("{MIN}description: \"{}\" # {}\n", "[".repeat(100), "{".repeat(100));
        assert!(parse(&quoted, "s.yaml", &[]).is_ok());
    }

    #[test]
    fn set_overrides_and_validation() {
        let (s, _) = parse(MIN, "s.yaml", &["cell_cfg.common_scs=15".into(), "traffic[0].rate_mbps=5".into()]).unwrap();
        assert_eq!(s.cell_cfg.common_scs, 15);
        assert!(matches!(s.traffic[0], TrafficSpec::UdpCbr { rate_mbps, .. } if rate_mbps == 5.0));
        let e = parse(MIN, "s.yaml", &["traffic[0].ue=3".into()]).unwrap_err().to_string();
        assert!(e.contains("traffic[0].ue") && e.contains("does not exist"), "{e}");
        let e = parse(MIN, "s.yaml", &["traffic[5].ue=0".into()]).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = parse(MIN, "s.yaml", &["duration_s=-1".into()]).unwrap_err().to_string();
        assert!(e.contains("duration_s"), "{e}");
        let e = parse("name: [", "s.yaml", &[]).unwrap_err().to_string();
        assert!(e.contains("YAML syntax"), "{e}");
        let e = parse(MIN, "s.yaml", &["cell_cfg.tdd_ul_dl_cfg.nof_ul_slots=9".into()]).unwrap_err().to_string();
        assert!(e.contains("cell_cfg.tdd_ul_dl_cfg") && e.contains("missing field `dl_ul_tx_period`"), "{e}");
        let bad = "cell_cfg.tdd_ul_dl_cfg={dl_ul_tx_period: 10, nof_dl_slots: 6, nof_ul_slots: 9}";
        let e = parse(MIN, "s.yaml", &[bad.into()]).unwrap_err().to_string();
        assert!(e.contains("cell_cfg.tdd_ul_dl_cfg") && e.contains("exceed"), "{e}");
    }
}
