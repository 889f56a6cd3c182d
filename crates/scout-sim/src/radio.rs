//! A scenario's UE group as radio links: the `ues[].channel` keys of the TR 38.901 models (path
//! loss, TDL fading, speed, powers), `ues[].position` / `distance_m` and `ues[].mobility`, checked
//! and turned into one [`RadioLink`] per UE and direction (scout-ran `phy::radio`). Every key
//! that is wrong is named, with what is accepted.

use std::f64::consts::PI;

use scout_ran::config::CellCfg;
use scout_ran::phy::channel::SinrSource;
use scout_ran::phy::fading::TdlProfile;
use scout_ran::phy::mobility::Mobility;
use scout_ran::phy::propagation::Scenario;
use scout_ran::phy::radio::{hex_ring, Neighbours, PowerControl, RadioLink, RadioSpec};
use scout_ran::rng::Rng;

use crate::scenario::{DistanceSpec, UeGroup};

/// What the group's channel is: the constant/trace SINR of before, or modelled links.
pub fn models_radio(g: &UeGroup) -> bool {
    g.channel.model.as_deref().is_some_and(|m| m.starts_with("tdl-")) || g.channel.pathloss != "none"
}

/// A bad key: (key under `ues[i]`, message).
pub type KeyError = (String, String);

/// A place in the plane, metres from the gNB.
type Point = [f64; 2];

/// The DL and UL SINR sources of each UE of group `gi` (UEs `first..first + count` of the cell).
pub fn links(
    g: &UeGroup,
    gi: usize,
    first: usize,
    cell: &CellCfg,
    seed: u64,
) -> Result<Vec<(SinrSource, SinrSource)>, KeyError> {
    let key = |k: &str| format!("ues[{gi}].{k}");
    let c = &g.channel;
    let (fading, pathloss) = models(c, &key)?;
    let fc_hz = cell.carrier_hz().ok_or_else(|| {
        (
            "cell_cfg.dl_arfcn".to_string(),
            format!("not set for band n{}; accepted: an NR-ARFCN of TS 38.104 §5.4.2 (0 to 3279165)", cell.band),
        )
    })?;
    let speed = c.speed_kmh / 3.6;
    let mobility = mobility(g, speed, &key)?;
    let scen = pathloss.unwrap_or(Scenario::Uma);
    if c.neighbours > 6 {
        return Err((key("channel.neighbours"), format!("{}; accepted: 0 to 6 (the first tier)", c.neighbours)));
    }
    if c.neighbours > 0 && pathloss.is_none() {
        return Err((
            key("channel.neighbours"),
            "without path loss: where the neighbours are needs it; accepted: channel.pathloss uma, umi or inh".into(),
        ));
    }
    if !(1..=4).contains(&c.ue_antennas) {
        return Err((key("channel.ue_antennas"), format!("{}; accepted: 1 to 4", c.ue_antennas)));
    }
    let (sites, ul_interferers) = neighbour_cells(c, scen, seed, &key)?;
    let neighbours = |dl: bool| {
        (c.neighbours > 0).then(|| Neighbours {
            at: if dl { sites.clone() } else { ul_interferers.clone() },
            at_ue: dl,
            load: c.neighbour_load,
            tx_power_dbm: if dl { c.gnb_tx_power_dbm } else { c.ue_tx_power_dbm },
            sites: if dl { Vec::new() } else { sites.clone() },
        })
    };
    // srsRAN's open-loop PUSCH power control (TS 38.213 §7.1.1), on every modelled UL.
    let power_control = PowerControl {
        p0_dbm: f64::from(cell.pusch.p0_nominal_with_grant),
        alpha: cell.pusch.path_loss_compensation_factor,
        mu: scout_ran::phy::mu_for_scs(cell.common_scs).unwrap_or(1),
    };
    let (h_bs, h_ut) = heights(c, scen).map_err(|(k, m)| (key(&k), m))?;
    let prbs = u32::from(scout_ran::phy::nof_prbs(cell.channel_bandwidth_mhz, cell.common_scs).unwrap_or(1));
    let mut out = Vec::new();
    for k in 0..g.count as usize {
        let ue = first + k;
        let start = start_position(g, k, ue, pathloss.is_some(), seed, &key)?;
        let spec = |dl: bool| RadioSpec {
            pathloss,
            fading: fading.map(|p| (p, c.delay_spread_ns * 1e-9)),
            fc_hz,
            tx_power_dbm: if dl { c.gnb_tx_power_dbm } else { c.ue_tx_power_dbm },
            noise_figure_db: if dl { c.ue_noise_figure_db } else { c.gnb_noise_figure_db },
            prbs,
            scs_hz: f64::from(cell.common_scs) * 1e3,
            mean_sinr_db: if dl { c.dl_sinr_db } else { c.ul_sinr_db },
            h_bs,
            h_ut,
            start,
            mobility: mobility.clone(),
            neighbours: neighbours(dl),
            power_control: (!dl).then_some(power_control),
            antennas: if dl {
                (u32::from(c.ue_antennas), u32::from(cell.nof_antennas_dl))
            } else {
                (u32::from(cell.nof_antennas_ul), 1)
            },
        };
        let link = |dl: bool| {
            SinrSource::Radio(Box::new(std::cell::RefCell::new(RadioLink::new(
                spec(dl),
                seed,
                ue,
                if dl { "dl" } else { "ul" },
            ))))
        };
        out.push((link(true), link(false)));
    }
    Ok(out)
}

/// The channel's models and their values: the fading profile (none: `constant`), the path loss
/// scenario (none: `none`), no trace beside them; delay spread, speed and powers in range.
fn models(
    c: &scout_ran::config::ChannelCfg,
    key: &dyn Fn(&str) -> String,
) -> Result<(Option<TdlProfile>, Option<Scenario>), KeyError> {
    let fading = match c.model.as_deref() {
        None | Some("constant") => None,
        Some(m) => match TdlProfile::parse(m) {
            Some(p) => Some(p),
            None => {
                return Err((
                    key("channel.model"),
                    format!("{m:?}; accepted: constant, tdl-a, tdl-b, tdl-c, tdl-d, tdl-e, replay (alone)"),
                ))
            }
        },
    };
    if c.sinr_trace.is_some() || c.mahimahi_trace.is_some() {
        return Err((key("channel.model"), "a trace and a modelled radio together; accepted: one of them".into()));
    }
    let pathloss = match c.pathloss.as_str() {
        "none" => None,
        p => match Scenario::parse(p) {
            Some(s) => Some(s),
            None => return Err((key("channel.pathloss"), format!("{p:?}; accepted: uma, umi, inh, none"))),
        },
    };
    if !(c.delay_spread_ns > 0.0 && c.delay_spread_ns <= 10_000.0) {
        return Err((key("channel.delay_spread_ns"), format!("{}; accepted: 0 < ns <= 10000", c.delay_spread_ns)));
    }
    if !(c.speed_kmh >= 0.0 && c.speed_kmh <= 500.0) {
        return Err((key("channel.speed_kmh"), format!("{}; accepted: 0 to 500", c.speed_kmh)));
    }
    for (k, v) in [
        ("gnb_tx_power_dbm", c.gnb_tx_power_dbm),
        ("ue_tx_power_dbm", c.ue_tx_power_dbm),
        ("ue_noise_figure_db", c.ue_noise_figure_db),
        ("gnb_noise_figure_db", c.gnb_noise_figure_db),
    ] {
        if !(-50.0..=80.0).contains(&v) {
            return Err((key(&format!("channel.{k}")), format!("{v}; accepted: -50 to 80")));
        }
    }
    Ok((fading, pathloss))
}

/// How the group's UEs move (`ues[].mobility`; linear at `speed` m/s when none is given and the
/// speed is not 0).
fn mobility(g: &UeGroup, speed: f64, key: &dyn Fn(&str) -> String) -> Result<Mobility, KeyError> {
    Ok(match &g.mobility {
        None if speed > 0.0 => Mobility::Linear { speed_mps: speed, heading_deg: 0.0 },
        None => Mobility::Static,
        Some(m) => match m.model.as_str() {
            "static" => Mobility::Static,
            "linear" => Mobility::Linear { speed_mps: speed, heading_deg: m.heading_deg },
            "random_waypoint" => {
                let area = m
                    .area_m
                    .ok_or_else(|| (key("mobility.area_m"), "missing; accepted: [x0, y0, x1, y1] in m".into()))?;
                if !(area[2] > area[0] && area[3] > area[1]) {
                    return Err((
                        key("mobility.area_m"),
                        format!("{area:?}; accepted: [x0, y0, x1, y1] with x1 > x0, y1 > y0"),
                    ));
                }
                Mobility::RandomWaypoint { area, speed_mps: speed, pause_s: m.pause_s.max(0.0) }
            }
            other => {
                return Err((key("mobility.model"), format!("{other:?}; accepted: static, linear, random_waypoint")))
            }
        },
    })
}

/// The neighbour cells' sites on the first tier at the inter-site distance, and one UE in each
/// (uniformly within half that distance of its gNB): the UL's interferers, the same for every UE
/// of the cell.
fn neighbour_cells(
    c: &scout_ran::config::ChannelCfg,
    scen: Scenario,
    seed: u64,
    key: &dyn Fn(&str) -> String,
) -> Result<(Vec<Point>, Vec<Point>), KeyError> {
    if !(0.0..=1.0).contains(&c.neighbour_load) {
        return Err((key("channel.neighbour_load"), format!("{}; accepted: 0 to 1", c.neighbour_load)));
    }
    let isd = c.isd_m.unwrap_or(scen.isd_m());
    if !(isd > 0.0 && isd <= 100_000.0) {
        return Err((key("channel.isd_m"), format!("{isd}; accepted: 0 < m <= 100000")));
    }
    let sites = hex_ring(c.neighbours as usize, isd);
    let ul_interferers: Vec<[f64; 2]> = sites
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let mut r = Rng::new(seed, &format!("cell.nb{k}.ue_position"));
            let (rad, a) = (isd / 2.0 * r.uniform().sqrt(), 2.0 * PI * r.uniform());
            [g[0] + rad * a.cos(), g[1] + rad * a.sin()]
        })
        .collect();
    Ok((sites, ul_interferers))
}

/// Where UE `ue` (the group's `k`-th) starts: its `position`, or at its `distance_m` and a seeded
/// angle; at the gNB when the channel has no path loss.
fn start_position(
    g: &UeGroup,
    k: usize,
    ue: usize,
    pathloss: bool,
    seed: u64,
    key: &dyn Fn(&str) -> String,
) -> Result<[f64; 2], KeyError> {
    Ok(match (&g.position, &g.distance_m) {
        (Some(p), None) => *p,
        (None, Some(d)) => {
            let d = match d {
                DistanceSpec::One(x) => *x,
                DistanceSpec::Range(r) if r.len() == 2 && r[0] <= r[1] => {
                    r[0] + (r[1] - r[0]) * (k as f64 + 0.5) / f64::from(g.count.max(1))
                }
                DistanceSpec::Range(r) => {
                    return Err((key("distance_m"), format!("{r:?}; accepted: a distance, or [min, max]")));
                }
            };
            if !(d > 0.0 && d <= 100_000.0) {
                return Err((key("distance_m"), format!("{d}; accepted: 0 < m <= 100000")));
            }
            let angle = 2.0 * PI * Rng::new(seed, &format!("ue{ue}.angle")).uniform();
            [d * angle.cos(), d * angle.sin()]
        }
        (Some(_), Some(_)) => return Err((key("position"), "with distance_m; accepted: one of them".into())),
        (None, None) if pathloss => {
            return Err((
                key("position"),
                "missing: path loss needs where the UE is; accepted: position [x, y] or distance_m".into(),
            ))
        }
        (None, None) => [0.0, 0.0],
    })
}

/// The gNB's and the UE's antenna heights (m): `channel.bs_height_m` / `ue_height_m`, or the
/// scenario's of TR 38.901 Table 7.4.1-1. The UE's within the table's applicability range (UMa,
/// UMi: 1.5 ≤ h_UT ≤ 22.5 m; InH, whose table gives none: 0.5 m up to the gNB's), the gNB's above
/// the UE and at most 150 m (UMa's and UMi's formulas are stated for h_BS = 25 and 10 m; another
/// height enters their breakpoint distance and d_3D, as other simulators evaluate them).
fn heights(c: &scout_ran::config::ChannelCfg, scen: Scenario) -> Result<(f64, f64), KeyError> {
    let (h_bs, h_ut) = (c.bs_height_m.unwrap_or(scen.bs_height_m()), c.ue_height_m.unwrap_or(scen.ue_height_m()));
    let (lo, hi, range) = match scen {
        Scenario::Inh => (0.5, h_bs, format!("0.5 to the gNB's height ({h_bs} m) indoors (inh)")),
        _ => (1.5, 22.5, "1.5 to 22.5 (TR 38.901 Table 7.4.1-1's range for uma and umi)".to_string()),
    };
    if !(lo..=hi).contains(&h_ut) {
        return Err(("channel.ue_height_m".into(), format!("{h_ut}; accepted: {range}")));
    }
    if !(h_bs > h_ut && h_bs <= 150.0) {
        return Err(("channel.bs_height_m".into(), format!("{h_bs}; accepted: above the UE ({h_ut} m), at most 150")));
    }
    Ok((h_bs, h_ut))
}

/// Each modelled UE's radio at the end of the run, `t_end_ns` (where a static UE was all along),
/// for `run.json` `radio`: distance, LOS, path loss with shadowing, DL RSRP and mean SINRs.
pub fn describe(ues: &[(&SinrSource, &SinrSource)], t_end_ns: i64) -> Vec<serde_json::Value> {
    // Both directions moved to the end (each moves when it is asked: the UL only at PUSCHs).
    for (dl, ul) in ues {
        dl.at(t_end_ns);
        ul.at(t_end_ns);
    }
    ues.iter()
        .enumerate()
        .filter_map(|(i, (dl, ul))| match (dl, ul) {
            (SinrSource::Radio(d), SinrSource::Radio(u)) => {
                let (d, u) = (d.borrow(), u.borrow());
                Some(serde_json::json!({
                    "ue": i,
                    "distance_m": (d.distance_m() * 10.0).round() / 10.0,
                    "los": d.los(),
                    "loss_db": (d.loss_db() * 100.0).round() / 100.0,
                    "rsrp_dbm": (d.rsrp_dbm() * 100.0).round() / 100.0,
                    "dl_mean_sinr_db": (d.mean_sinr_db() * 100.0).round() / 100.0,
                    "neighbours": d.spec().neighbours.as_ref().map_or(0, |n| n.at.len()),
                    "ul_mean_sinr_db": (u.mean_sinr_db() * 100.0).round() / 100.0,
                    "ul_mean_sinr_1prb_db": (u.mean_sinr_for_db(1) * 100.0).round() / 100.0,
                    "ul_power_headroom_1prb_db": u.spec().power_control.map(|pc| {
                        (pc.headroom_db(u.spec().tx_power_dbm, 1, u.loss_db()) * 100.0).round() / 100.0
                    }),
                    "fading": d.spec().fading.map(|(p, ds)| format!("{p:?} {:.0} ns", ds * 1e9)),
                    // Receive × transmit antennas of each direction (the DL's rank is at most
                    // the smaller, with fading; slot rows carry the RI reported and the layers).
                    "dl_antennas": [d.spec().antennas.0, d.spec().antennas.1],
                    "ul_antennas": [u.spec().antennas.0, u.spec().antennas.1],
                    "speed_kmh": d.spec().mobility.speed_mps() * 3.6,
                    "heights_m": {"gnb": d.spec().h_bs, "ue": d.spec().h_ut},
                }))
            }
            (d, u) if matches!(d, SinrSource::Replay(_)) || matches!(u, SinrSource::Replay(_)) => {
                let summary = |s: &SinrSource| match s {
                    SinrSource::Replay(r) => Some(r.summary().clone()),
                    _ => None,
                };
                let (dl, ul) = (summary(d), summary(u));
                let origin = dl.as_ref().or(ul.as_ref()).expect("one direction replays");
                Some(serde_json::json!({
                    "ue": i,
                    // A direction the recording has no transmission of keeps its constant SINR: null.
                    "replay": {"run": origin.run, "recorded_ue": origin.recorded_ue, "dl": dl, "ul": ul},
                }))
            }
            _ => None,
        })
        .collect()
}
