//! `ues[].channel.model: replay`: a recorded run's radio for a group's UEs — the recorded UE's
//! slot rows read from `RUN/events/slot.parquet` and handed to scout-ran's sans-IO
//! [`Replay`] (what is replayed and what is not: `phy::replay`, docs/model.md).

use std::path::Path;

use scout_events::{Dir, SlotEvent};
use scout_ran::config::CellCfg;
use scout_ran::phy::channel::SinrSource;
use scout_ran::phy::replay::{Recorded, Replay};

use crate::scenario::UeGroup;

/// A bad key: (key under `ues[i]`, message).
type KeyError = (String, String);

/// The DL and UL sources of group `gi`'s UEs, replaying the run its `channel.run` names
/// (relative to the scenario's folder `dir`); `sinr_for` gives, per direction, the SINR at which
/// the scenario's error model carries MCS `m` at OLLA's target.
pub fn links(
    g: &UeGroup,
    gi: usize,
    dir: &Path,
    cell: &CellCfg,
    sinr_for: impl Fn(Dir, u8) -> f64,
) -> Result<(SinrSource, SinrSource), KeyError> {
    let key = |k: &str| format!("ues[{gi}].channel.{k}");
    let c = &g.channel;
    let Some(run) = c.run.as_deref() else {
        return Err((key("run"), "missing: replay needs a recorded run; accepted: a run directory (e.g. written by `scout ingest srsran`), relative to the scenario".into()));
    };
    if c.sinr_trace.is_some() || c.mahimahi_trace.is_some() || c.mahimahi_ul_trace.is_some() || c.pathloss != "none" {
        return Err((
            key("model"),
            "replay with a trace or path loss; accepted: replay alone (the recording is the radio)".into(),
        ));
    }
    if g.position.is_some() || g.distance_m.is_some() || g.mobility.is_some() {
        return Err((
            format!("ues[{gi}].position"),
            "a replayed UE has no place of its own (its radio is the recording's); accepted: none of position, distance_m, mobility".into(),
        ));
    }
    if !(c.replay_window_ms > 0.0 && c.replay_window_ms <= 60_000.0) {
        return Err((key("replay_window_ms"), format!("{}; accepted: 0 < ms <= 60000", c.replay_window_ms)));
    }
    let path = dir.join(run).join("events").join("slot.parquet");
    if !path.is_file() {
        return Err((
            key("run"),
            format!(
                "{}: no slot table there; accepted: a Scout run directory (RUN/events/slot.parquet)",
                path.display()
            ),
        ));
    }
    let rows = scout_events::read::read_slot_events(&path).map_err(|e| (key("run"), e.to_string()))?;
    // Transmissions: UE rows with a TBS, an MCS or an outcome (not the cell's rows, nor BSR rows).
    let tx: Vec<&SlotEvent> =
        rows.iter().filter(|r| r.ue.is_some() && (r.tbs.is_some() || r.mcs.is_some() || r.ack.is_some())).collect();
    let mut ues: Vec<u32> = tx.iter().filter_map(|r| r.ue).collect();
    ues.sort_unstable();
    ues.dedup();
    let count = |u: u32| tx.iter().filter(|r| r.ue == Some(u)).count();
    let listed = || ues.iter().map(|u| format!("{u} ({} transmissions)", count(*u))).collect::<Vec<_>>().join(", ");
    let ue = match (c.replay_ue, ues.as_slice()) {
        (_, []) => {
            return Err((
                key("run"),
                format!("{}: no UE transmission (no UE row with a TBS, an MCS or a HARQ outcome)", path.display()),
            ))
        }
        (None, [only]) => *only,
        (None, _) => {
            return Err((key("replay_ue"), format!("missing: the run has several UEs; accepted: one of {}", listed())))
        }
        (Some(u), _) if ues.contains(&u) => u,
        (Some(u), _) => return Err((key("replay_ue"), format!("{u}: not in the run; accepted: one of {}", listed()))),
    };
    let mine: Vec<&SlotEvent> = tx.into_iter().filter(|r| r.ue == Some(ue)).collect();
    let t0 = mine.iter().map(|r| r.t_ns).min().expect("the UE has rows");
    let slot = scout_ran::phy::slot_ns(scout_ran::phy::mu_for_scs(cell.common_scs).unwrap_or(0));
    let span = mine.iter().map(|r| r.t_ns).max().expect("the UE has rows") - t0 + slot;
    let window = (c.replay_window_ms * 1e6) as i64;
    let direction = |d: Dir, max_mcs: u8| -> Result<SinrSource, KeyError> {
        let recorded: Vec<Recorded> = mine
            .iter()
            .filter(|r| r.dir == d)
            .map(|r| Recorded {
                t_ns: r.t_ns - t0,
                mcs: r.mcs,
                retx_index: r.retx_index.unwrap_or(0),
                ack: r.ack,
                cqi: r.cqi,
                ri: r.ri,
                sinr_db: r.sinr_db,
            })
            .collect();
        if recorded.is_empty() {
            // Nothing recorded in this direction: it keeps the group's constant SINR.
            let s = if d == Dir::Dl { c.dl_sinr_db } else { c.ul_sinr_db };
            return Ok(SinrSource::Constant(s));
        }
        let mcs_sinr = (0..=max_mcs).map(|m| sinr_for(d, m)).collect();
        let r = Replay::new(&recorded, span, window, mcs_sinr)
            .map_err(|e| (key("run"), format!("{}: UE {ue}'s {d} cannot be replayed: {e}", path.display())))?;
        Ok(SinrSource::Replay(Box::new(r.from_run(run, ue))))
    };
    let (dl_max, ul_max) = (cell.pdsch.mcs_table.table().max_mcs(), cell.pusch.mcs_table.table().max_mcs());
    Ok((direction(Dir::Dl, dl_max)?, direction(Dir::Ul, ul_max)?))
}
