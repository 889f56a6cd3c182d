//! The codes of points, layers and components, shared with the relational engine
//! (`python/scout/analysis/engine.py`: `POINT_RANK`, `LAYER_RANK`, `COMPONENTS`; a Python test
//! checks that both say the same).
//!
//! A point's code is its rank among simultaneous events of one packet: the event that *ends* an
//! activity sorts first (docs/attribution.md, "The journey of a packet"); a layer's code is its
//! rank among simultaneous events of the same point (lower layers first: a delivery climbs the stack).

/// Points by code.
pub const POINTS: [&str; 12] = [
    "rx",
    "proc_end",
    "arrive",
    "deliver",
    "tx",
    "enqueue",
    "dequeue",
    "hol",
    "segment",
    "proc_begin",
    "ce_mark",
    "drop",
];
/// The code of a point name not in [`POINTS`].
pub const POINT_OTHER: u8 = 12;

/// Layers by code.
pub const LAYERS: [&str; 12] =
    ["phy", "mac", "rlc", "f1u", "pdcp", "sdap", "cuup_exec", "gtpu", "n3", "upf", "n6", "app"];
/// The code of a layer name not in [`LAYERS`] (reported as `other`).
pub const LAYER_OTHER: u8 = 15;

/// Components by code.
pub const COMPONENTS: [&str; 8] = [
    "processing",
    "queueing_compute",
    "queueing_protocol",
    "scheduling",
    "retransmission",
    "reordering",
    "transport",
    "unattributed",
];

pub mod p {
    pub const RX: u8 = 0;
    pub const PROC_END: u8 = 1;
    pub const ARRIVE: u8 = 2;
    pub const DELIVER: u8 = 3;
    pub const TX: u8 = 4;
    pub const ENQUEUE: u8 = 5;
    pub const DEQUEUE: u8 = 6;
    pub const HOL: u8 = 7;
    pub const SEGMENT: u8 = 8;
    pub const PROC_BEGIN: u8 = 9;
    pub const CE_MARK: u8 = 10;
    pub const DROP: u8 = 11;
}

pub mod l {
    pub const MAC: u8 = 1;
    pub const RLC: u8 = 2;
    pub const PDCP: u8 = 4;
    pub const APP: u8 = 11;
}

pub mod c {
    pub const PROCESSING: u8 = 0;
    pub const QUEUEING_COMPUTE: u8 = 1;
    pub const QUEUEING_PROTOCOL: u8 = 2;
    pub const SCHEDULING: u8 = 3;
    pub const RETRANSMISSION: u8 = 4;
    pub const REORDERING: u8 = 5;
    pub const TRANSPORT: u8 = 6;
    pub const UNATTRIBUTED: u8 = 7;
}

pub fn point_code(name: &str) -> u8 {
    POINTS.iter().position(|&p| p == name).map_or(POINT_OTHER, |i| i as u8)
}

pub fn layer_code(name: &str) -> u8 {
    LAYERS.iter().position(|&l| l == name).map_or(LAYER_OTHER, |i| i as u8)
}

/// The name a layer code is reported under.
pub fn layer_name(code: u8) -> &'static str {
    LAYERS.get(code as usize).copied().unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_codes_match_the_tables() {
        assert_eq!(POINTS[p::RX as usize], "rx");
        assert_eq!(POINTS[p::PROC_END as usize], "proc_end");
        assert_eq!(POINTS[p::ARRIVE as usize], "arrive");
        assert_eq!(POINTS[p::TX as usize], "tx");
        assert_eq!(POINTS[p::ENQUEUE as usize], "enqueue");
        assert_eq!(POINTS[p::DEQUEUE as usize], "dequeue");
        assert_eq!(POINTS[p::HOL as usize], "hol");
        assert_eq!(POINTS[p::SEGMENT as usize], "segment");
        assert_eq!(POINTS[p::PROC_BEGIN as usize], "proc_begin");
        assert_eq!(POINTS[p::DELIVER as usize], "deliver");
        assert_eq!(POINTS[p::CE_MARK as usize], "ce_mark");
        assert_eq!(POINTS[p::DROP as usize], "drop");
        assert_eq!(LAYERS[l::MAC as usize], "mac");
        assert_eq!(LAYERS[l::RLC as usize], "rlc");
        assert_eq!(LAYERS[l::PDCP as usize], "pdcp");
        assert_eq!(LAYERS[l::APP as usize], "app");
        assert_eq!(COMPONENTS[c::PROCESSING as usize], "processing");
        assert_eq!(COMPONENTS[c::QUEUEING_COMPUTE as usize], "queueing_compute");
        assert_eq!(COMPONENTS[c::QUEUEING_PROTOCOL as usize], "queueing_protocol");
        assert_eq!(COMPONENTS[c::SCHEDULING as usize], "scheduling");
        assert_eq!(COMPONENTS[c::RETRANSMISSION as usize], "retransmission");
        assert_eq!(COMPONENTS[c::REORDERING as usize], "reordering");
        assert_eq!(COMPONENTS[c::TRANSPORT as usize], "transport");
        assert_eq!(COMPONENTS[c::UNATTRIBUTED as usize], "unattributed");
        assert_eq!(layer_name(LAYER_OTHER), "other");
        assert_eq!(point_code("nonsense"), POINT_OTHER);
    }
}
