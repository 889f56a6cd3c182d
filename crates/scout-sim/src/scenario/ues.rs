//! `ues`: groups of identical UEs, their DRBs, channel, place and movement.

use serde::Deserialize;

use scout_ran::config::{ChannelCfg, CoreCfg};

use super::Invalid;

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

/// The most DRBs a UE may have (TS 38.331 maxDRB).
pub const MAX_DRBS: usize = 29;

/// The UEs in all: at least one group, 1..=1024 UEs.
pub(super) fn count(ues: &[UeGroup]) -> Result<u64, Invalid> {
    if ues.is_empty() {
        return Err(("ues".into(), "at least one UE group is needed".into()));
    }
    let nues: u64 = ues.iter().map(|g| u64::from(g.count)).sum();
    if nues == 0 || nues > 1024 {
        return Err(("ues".into(), format!("{nues} UEs in total; accepted: 1..=1024")));
    }
    Ok(nues)
}

/// Each group: its channel's replay window, a slice of `core.slices`, 1..=maxDRB 5QIs.
pub(super) fn check(ues: &[UeGroup], core: &CoreCfg) -> Result<(), Invalid> {
    let slices: Vec<&str> = core.slices.iter().map(|x| x.name.as_str()).collect();
    for (i, g) in ues.iter().enumerate() {
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
    Ok(())
}
