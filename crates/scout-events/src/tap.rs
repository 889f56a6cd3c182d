//! A tap: something that sees every event a run writes, batch by batch, on the writer's thread
//! (the live view, `scout-live`). The producer pays almost nothing for it: rows reach a tap after they
//! left the producer's hands, in the order the producer wrote them, a table at a time.

use std::sync::Arc;

use crate::schema::{ControlEvent, PacketEvent, SlotEvent};

/// Sees each batch of rows the writer takes from its producer (every row, once).
pub trait Tap: Send + Sync + std::fmt::Debug {
    fn packets(&self, rows: &[PacketEvent]);
    fn slots(&self, rows: &[SlotEvent]);
    fn controls(&self, rows: &[ControlEvent]);
}

/// A tap as the drivers' options hold it.
pub type SharedTap = Arc<dyn Tap>;
