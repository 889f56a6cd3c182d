//! The packet the model carries: identities and sizes, no payload.

use scout_events::Dir;

/// One user-plane packet (an IP datagram) and the identities it is recorded under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Unique in the run.
    pub pkt: u64,
    pub flow: u32,
    pub ue: u32,
    pub dir: Dir,
    /// IP datagram size in bytes.
    pub bytes: u32,
    pub qfi: u8,
    pub drb: u8,
    pub slice: u8,
    pub ecn: u8,
}
