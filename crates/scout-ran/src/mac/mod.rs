//! MAC: BSR tables, HARQ processes and the scheduler's per-slot decisions (the decisions themselves
//! live in [`crate::stack`], which owns the UEs' state).

pub mod bsr;
pub mod harq;
