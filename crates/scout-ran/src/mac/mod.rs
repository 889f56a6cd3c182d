//! MAC: BSR tables, HARQ processes, the scheduler's policy (a plug point) and the TBS cache. The
//! per-slot decisions that join them still live in [`crate::stack`], which owns the UEs' state.

pub mod bsr;
pub mod harq;
pub mod scheduler;
pub mod tbs_cache;
