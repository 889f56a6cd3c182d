//! MAC: the gNB's MAC entity (`gnb`: scheduling, HARQ, link adaptation, the UEs' UL buffers as it
//! knows them), the UE's UL MAC (`ue`: SR, BSR, grants; `lcp`: logical channel prioritisation),
//! ANBR (`anbr`: the recommended bit rate MAC CE), and their parts — BSR tables, HARQ processes, HARQ-ACK timing and PUCCH capacity, the
//! scheduler's policy (a plug point), the TBS cache. The stack wires them to the RLC entities
//! (`stack/air.rs`).

pub mod anbr;
pub mod bsr;
pub mod gnb;
pub mod harq;
pub mod lcp;
pub mod pucch;
pub mod scheduler;
pub mod tbs_cache;
pub mod ue;
pub mod ul_view;
