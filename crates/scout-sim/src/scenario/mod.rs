//! Scenario files: YAML with srsRAN `gnb.yaml` key names for RAN parameters, Scout's own sections
//! for the core, the CU-UP executors, the UEs and the traffic. Unknown keys are errors naming the
//! key path and the accepted keys; `--set key=value` overrides are applied before validation.
//!
//! One file per section, each holding the section's types and its checks: `ues.rs` (the UE
//! groups), `apps.rs` (the emulator's applications and QoS rules), `traffic.rs` (the generated
//! sources). This file holds the scenario, loading, `--set`, and [`validate`]'s outline.

mod apps;
mod traffic;
mod ues;

pub use apps::{parse_prefix, rule_protocols, AppSpec, QosRule};
pub use traffic::{
    AllWord, CompensationName, ControlName, DirName, EcnName, FeedbackName, Period, TrafficSpec, UeSel, VideoSpec,
    MAX_OFFERED_PPS, MAX_PACKETS_PER_FRAME, MIN_ON_S,
};
pub use ues::{DistanceSpec, MobilityCfg, UeGroup, MAX_DRBS};

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml::Value;

use scout_ran::config::{CellCfg, CoreCfg, CuUpCfg, QosCfg};

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

fn default_seed() -> u64 {
    1
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

/// A value a scenario cannot run with: the key path, and what is wrong with what is accepted.
type Invalid = (String, String);

/// Every check of a scenario's values, section by section (each beside its section's types); the
/// first that fails is the error.
fn validate(s: &Scenario) -> Result<(), Invalid> {
    if !(s.duration_s > 0.0 && s.duration_s <= 86_400.0) {
        return Err(("duration_s".into(), format!("{}; accepted: 0 < duration_s <= 86400", s.duration_s)));
    }
    let nues = ues::count(&s.ues)?;
    apps::check_apps(&s.apps, nues)?;
    apps::check_rules(&s.qos_rules, &s.ues)?;
    ues::check(&s.ues, &s.core)?;
    traffic::check(&s.traffic, nues)
}
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
