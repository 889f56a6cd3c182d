//! Readers that turn real testbed output into Scout's event schema.
//!
//! `srsran`: srsRAN Project gNB text logs. This first layer reads the log itself — entries with
//! their continuation lines, gzip or plain, with every anomaly counted — and is what the per-layer
//! line parsers and the journey stitching build on (see the srsRAN ingest issue).

pub mod pcap;
pub mod srsran;
