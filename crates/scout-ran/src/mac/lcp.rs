//! Logical channel prioritisation at the UE (TS 38.321 §5.4.3.1): how a new UL TB is shared among
//! the UE's logical channels. Each channel j keeps a bucket Bj, filled at its prioritisedBitRate
//! (PBR) up to PBR × bucketSizeDuration (BSD) (§5.4.3.1.2); a TB serves first every channel with
//! Bj > 0 in priority order up to Bj (all its data with PBR infinity), Bj drops by what it got, and
//! what is left of the TB goes to the channels in strict priority order (§5.4.3.1.3).
//!
//! With srsRAN's default PBR of infinity this is strict priority. Not modelled: the
//! allowedSCS/maxPUSCH-Duration/configuredGrantType1 mapping restrictions (one cell, one SCS).

/// `prioritisedBitRate` in kB/s; `None` is infinity (srsRAN's 65537).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LchCfg {
    /// Logical channel priority (lower is more important).
    pub priority: u8,
    pub pbr_kbytes_per_s: Option<u32>,
    pub bsd_ms: u32,
}

#[derive(Clone, Debug)]
struct Lch {
    cfg: LchCfg,
    /// Bj in bytes (may go negative, §5.4.3.1.3).
    bj: i64,
}

/// The UE's channels in the order it serves them (priority, then index).
#[derive(Clone, Debug, Default)]
pub struct Lcp {
    lchs: Vec<Lch>,
    order: Vec<usize>,
    /// When the buckets were last filled.
    filled_at: Option<i64>,
}

impl Lcp {
    pub fn new(cfgs: &[LchCfg]) -> Lcp {
        let mut order: Vec<usize> = (0..cfgs.len()).collect();
        order.sort_by_key(|i| (cfgs[*i].priority, *i));
        Lcp { lchs: cfgs.iter().map(|c| Lch { cfg: *c, bj: 0 }).collect(), order, filled_at: None }
    }

    /// Shares a TB of `budget` bytes at `now` (ns): `pull(j, room)` takes up to `room` bytes of
    /// channel j's data (MAC subheaders included) and returns how many it took.
    pub fn allocate(&mut self, now: i64, mut budget: u32, mut pull: impl FnMut(usize, u32) -> u32) {
        self.fill(now);
        // Step 1: every channel with Bj > 0, in priority order, up to Bj.
        for k in 0..self.order.len() {
            let j = self.order[k];
            let lch = &self.lchs[j];
            if budget == 0 || lch.bj <= 0 {
                continue;
            }
            let room = match lch.cfg.pbr_kbytes_per_s {
                None => budget,
                Some(_) => budget.min(lch.bj.min(i64::from(u32::MAX)) as u32),
            };
            let took = pull(j, room).min(budget);
            budget -= took;
            // Step 2: Bj less what the channel got.
            if lch.cfg.pbr_kbytes_per_s.is_some() {
                self.lchs[j].bj -= i64::from(took);
            }
        }
        // Step 3: what is left, in strict priority order.
        for &j in &self.order {
            if budget == 0 {
                break;
            }
            budget -= pull(j, budget).min(budget);
        }
    }

    /// §5.4.3.1.2: Bj += PBR × T since the last fill, up to PBR × BSD; infinite PBR is always > 0.
    fn fill(&mut self, now: i64) {
        let dt = now - self.filled_at.unwrap_or(now);
        self.filled_at = Some(now);
        for l in &mut self.lchs {
            match l.cfg.pbr_kbytes_per_s {
                None => l.bj = i64::MAX,
                Some(pbr) => {
                    // kB/s × ns: bytes = pbr · 1000 · dt / 1e9.
                    let add = i64::from(pbr) * dt / 1_000_000;
                    let max = i64::from(pbr) * i64::from(l.cfg.bsd_ms);
                    l.bj = (l.bj + add).min(max);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// Channel 0 (priority 1, PBR 8 kB/s, BSD 100 ms) and channel 1 (priority 2, PBR infinity),
    /// both backlogged: a TB of 2000 bytes every 10 ms.
    fn run(pbr0: Option<u32>) -> [u32; 2] {
        let mut lcp = Lcp::new(&[
            LchCfg { priority: 1, pbr_kbytes_per_s: pbr0, bsd_ms: 100 },
            LchCfg { priority: 2, pbr_kbytes_per_s: None, bsd_ms: 100 },
        ]);
        let mut got = [0u32; 2];
        for i in 0..100 {
            lcp.allocate(i * 10 * MS, 2000, |j, room| {
                got[j] += room;
                room
            });
        }
        got
    }

    #[test]
    fn infinite_pbr_is_strict_priority() {
        // Channel 1 has the better PBR (infinity) but the worse priority: step 1 serves channel 0
        // first with all it wants, and it wants everything.
        assert_eq!(run(None), [200_000, 0]);
    }

    #[test]
    fn a_finite_pbr_lets_a_lower_priority_channel_through_and_is_made_up_in_step_3() {
        // Channel 0 at 8 kB/s earns 80 bytes per 10 ms: step 1 gives it its bucket, channel 1
        // (infinite PBR) then takes the rest of each TB; step 3 has nothing left.
        let [a, b] = run(Some(8));
        assert_eq!(a + b, 200_000);
        assert_eq!(a, 8 * 990, "8 kB/s over the 990 ms between the first and the last TB");
        // A bucket never holds more than PBR × BSD.
        let mut lcp = Lcp::new(&[LchCfg { priority: 1, pbr_kbytes_per_s: Some(8), bsd_ms: 100 }]);
        lcp.allocate(0, 0, |_, _| 0);
        let mut rooms = Vec::new();
        lcp.allocate(10_000 * MS, 10_000, |_, room| {
            rooms.push(room);
            0
        });
        assert_eq!(rooms, vec![800, 10_000], "step 1 up to 8 kB/s × 100 ms, then step 3 the rest");
    }
}
