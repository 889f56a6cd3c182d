//! Physical-layer timing and resources: numerology, TDD patterns, PRBs, MCS and TBS, the channel.

pub mod bicm_table;
pub mod channel;
pub mod fading;
pub mod fading_grid;
pub mod link;
pub mod mcs;
pub mod mimo;
pub mod mobility;
pub mod propagation;
pub mod radio;
pub mod replay;
pub mod slot;
pub mod tbs;
pub mod tdd;

/// Subcarrier spacing in kHz for numerology μ (TS 38.211 §4.2, Table 4.2-1): 15 · 2^μ.
pub fn scs_khz(mu: u8) -> u32 {
    15 << mu
}

/// Numerology μ of a subcarrier spacing in kHz (the inverse of [`scs_khz`]); `None` for a
/// spacing TS 38.211 Table 4.2-1 does not define for data (15, 30, 60, 120 kHz).
pub fn mu_for_scs(scs_khz: u32) -> Option<u8> {
    match scs_khz {
        15 => Some(0),
        30 => Some(1),
        60 => Some(2),
        120 => Some(3),
        _ => None,
    }
}

/// Slot duration in ns for numerology μ: 1 ms / 2^μ (TS 38.211 §4.3.2, Table 4.3.2-1).
pub fn slot_ns(mu: u8) -> i64 {
    1_000_000 >> mu
}

/// Slots per 10 ms frame: 10 · 2^μ (TS 38.211 Table 4.3.2-1).
pub fn slots_per_frame(mu: u8) -> u32 {
    10 << mu
}

/// OFDM symbols per slot with normal cyclic prefix (TS 38.211 Table 4.3.2-1).
pub const SYMBOLS_PER_SLOT: u32 = 14;

/// Nominal symbol duration in ns (slot / 14). The model ignores the longer cyclic prefix of the
/// first symbol in every 0.5 ms (TS 38.211 §5.3.1); the error is < 0.6 µs per slot.
pub fn symbol_ns(mu: u8) -> i64 {
    slot_ns(mu) / SYMBOLS_PER_SLOT as i64
}

/// Maximum transmission bandwidth N_RB for a channel bandwidth and SCS.
///
/// FR1: TS 38.101-1 Table 5.3.2-1. FR2: TS 38.101-2 Table 5.3.2-1. Returns `None` for a
/// combination the tables do not define.
pub fn nof_prbs(bandwidth_mhz: u32, scs_khz: u32) -> Option<u16> {
    // (bandwidth MHz, N_RB) per SCS, TS 38.101-1 Table 5.3.2-1.
    const FR1_15: &[(u32, u16)] =
        &[(5, 25), (10, 52), (15, 79), (20, 106), (25, 133), (30, 160), (35, 188), (40, 216), (45, 242), (50, 270)];
    const FR1_30: &[(u32, u16)] = &[
        (5, 11),
        (10, 24),
        (15, 38),
        (20, 51),
        (25, 65),
        (30, 78),
        (35, 92),
        (40, 106),
        (45, 119),
        (50, 133),
        (60, 162),
        (70, 189),
        (80, 217),
        (90, 245),
        (100, 273),
    ];
    const FR1_60: &[(u32, u16)] = &[
        (10, 11),
        (15, 18),
        (20, 24),
        (25, 31),
        (30, 38),
        (35, 44),
        (40, 51),
        (45, 58),
        (50, 65),
        (60, 79),
        (70, 93),
        (80, 107),
        (90, 121),
        (100, 135),
    ];
    // TS 38.101-2 Table 5.3.2-1 (FR2).
    const FR2_120: &[(u32, u16)] = &[(50, 32), (100, 66), (200, 132), (400, 264)];
    let table = match scs_khz {
        15 => FR1_15,
        30 => FR1_30,
        60 => FR1_60,
        120 => FR2_120,
        _ => return None,
    };
    table.iter().find(|(bw, _)| *bw == bandwidth_mhz).map(|(_, n)| *n)
}

/// The bandwidths (MHz) defined for an SCS, for error messages.
pub fn valid_bandwidths(scs_khz: u32) -> Vec<u32> {
    (1..=400).filter(|bw| nof_prbs(*bw, scs_khz).is_some()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerology_table_4_3_2_1() {
        assert_eq!((scs_khz(0), slot_ns(0), slots_per_frame(0)), (15, 1_000_000, 10));
        assert_eq!((scs_khz(1), slot_ns(1), slots_per_frame(1)), (30, 500_000, 20));
        assert_eq!((scs_khz(2), slot_ns(2), slots_per_frame(2)), (60, 250_000, 40));
        assert_eq!((scs_khz(3), slot_ns(3), slots_per_frame(3)), (120, 125_000, 80));
        assert_eq!(symbol_ns(1), 35_714);
    }

    #[test]
    fn prbs_table_5_3_2_1() {
        assert_eq!(nof_prbs(20, 15), Some(106));
        assert_eq!(nof_prbs(20, 30), Some(51));
        assert_eq!(nof_prbs(100, 30), Some(273));
        assert_eq!(nof_prbs(10, 15), Some(52));
        assert_eq!(nof_prbs(40, 30), Some(106));
        assert_eq!(nof_prbs(100, 120), Some(66));
        assert_eq!(nof_prbs(100, 15), None);
        assert_eq!(valid_bandwidths(60).first(), Some(&10));
    }
}
