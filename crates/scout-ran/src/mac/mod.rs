//! MAC: BSR tables, HARQ processes, HARQ-ACK timing and PUCCH capacity, the scheduler's policy (a
//! plug point), the TBS cache and the UE's UL MAC (SR, BSR, grants). The gNB MAC's per-slot
//! procedure that joins them with the bearers' RLC entities is in [`crate::stack`] (`stack/air.rs`), which owns the UEs' state.

pub mod bsr;
pub mod harq;
pub mod lcp;
pub mod pucch;
pub mod scheduler;
pub mod tbs_cache;
pub mod ue;
pub mod ul_view;
