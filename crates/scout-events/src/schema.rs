//! The event schema, v1: the single definition of Scout's three event tables.
//!
//! Every producer (simulator, emulator, srsRAN and pcap ingest, eBPF probe) fills these structs and
//! hands them to the one writer. Enumerations are closed sets whose names are written as Parquet
//! dictionary strings; their order here is their dictionary order and never changes within a
//! schema version (new values are appended). `docs/schema.md` is the user-facing description; a test
//! in `python/tests/test_docs.py` checks that every column and enum value here is documented there.

/// Version written into `run.json` and every Parquet file's metadata.
pub const SCHEMA_VERSION: u32 = 1;

/// Defines a closed enumeration whose values are written as dictionary strings.
macro_rules! dict_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        dict_enum! { @enum #[derive(Debug)] $(#[$m])* $name { $($(#[$vm])* $variant = $text),+ } }
    };
    // `Debug` as the name's, quoted as a string's (a `&'static str` before it was an enum: the
    // golden digests hash the rows' `Debug`).
    (debug_as_name $(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        dict_enum! { @enum $(#[$m])* $name { $($(#[$vm])* $variant = $text),+ } }
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(self.as_str(), f)
            }
        }
    };
    (@enum $(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every value, in dictionary order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every value's name, in dictionary order (the Parquet dictionary).
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The name written to the tables.
            pub fn as_str(self) -> &'static str {
                Self::NAMES[self as usize]
            }

            /// Parses a name as written to the tables.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::NAMES.iter().position(|n| *n == name).map(|i| Self::ALL[i])
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
#[cfg(feature = "parquet")] // header.rs, its one user outside this file, needs the feature
pub(crate) use dict_enum;

dict_enum! {
    /// The network function (or end host) where an event happened.
    Node {
        Ue = "ue",
        GnbCu = "gnb_cu",
        GnbDu = "gnb_du",
        Upf = "upf",
        Dn = "dn",
        App = "app",
    }
}

dict_enum! {
    /// The layer (or link) of the user plane where an event happened.
    Layer {
        App = "app",
        N6 = "n6",
        Upf = "upf",
        N3 = "n3",
        Gtpu = "gtpu",
        CuupExec = "cuup_exec",
        Sdap = "sdap",
        Pdcp = "pdcp",
        F1u = "f1u",
        Rlc = "rlc",
        Mac = "mac",
        Phy = "phy",
    }
}

dict_enum! {
    /// What happened to the packet at the checkpoint. See `docs/schema.md` for the timing rules that
    /// the attribution relies on (e.g. `enqueue → proc_begin` is compute queueing, `enqueue → dequeue`
    /// protocol queueing).
    Point {
        /// The packet arrived at this node over the link named by `layer`.
        Arrive = "arrive",
        /// The packet entered the queue named by `queue`.
        Enqueue = "enqueue",
        /// The packet left a protocol queue (`queue`) to be handed on.
        Dequeue = "dequeue",
        /// A worker began processing the packet.
        ProcBegin = "proc_begin",
        /// A worker finished processing the packet.
        ProcEnd = "proc_end",
        /// The packet (or a segment of it) was put on the link / air; `retx` > 0 for retransmissions.
        Tx = "tx",
        /// The packet (or a segment) was received correctly by the peer's lower layer.
        Rx = "rx",
        /// An RLC PDU carrying bytes `[seg_offset, seg_offset + bytes)` of the SDU was built.
        Segment = "segment",
        /// The layer handed the complete packet to the layer above.
        Deliver = "deliver",
        /// The packet was dropped here; `reason` says why.
        Drop = "drop",
        /// The packet was marked Congestion Experienced (L4S / classic ECN).
        CeMark = "ce_mark",
        /// The packet reached the head of the queue named by `queue` (all ahead of it have left).
        Hol = "hol",
    }
}

dict_enum! {
    /// Direction of the packet: downlink (towards the UE) or uplink.
    Dir {
        Dl = "dl",
        Ul = "ul",
    }
}

dict_enum! {
    /// Why a packet was dropped (packet `drop` events) or a control event's cause.
    Reason {
        /// An SDU arrived at a full RLC SDU queue (limit in SDUs or bytes), TS 38.322 §5.2 (impl.).
        RlcQueueFull = "rlc_queue_full",
        /// RLC AM gave up after maxRetxThreshold retransmissions, TS 38.322 §5.3.2.
        RlcMaxRetx = "rlc_max_retx",
        /// RLC UM/AM receiver discarded incomplete segments on t-Reassembly expiry, TS 38.322 §5.2.2.2.4.
        RlcReassemblyTimeout = "rlc_reassembly_timeout",
        /// A duplicate RLC PDU or segment was discarded by the receiver.
        RlcDuplicate = "rlc_duplicate",
        /// The PDCP discard timer expired before the SDU was transmitted, TS 38.323 §5.3.
        PdcpDiscardTimer = "pdcp_discard_timer",
        /// srsRAN-style early drop: the un-delivered PDCP volume exceeds what RLC may hold.
        PdcpEarlyDrop = "pdcp_early_drop",
        /// The PDCP receiver discarded a PDU older than RX_DELIV or a duplicate, TS 38.323 §5.2.2.1.
        PdcpRxOutOfWindow = "pdcp_rx_out_of_window",
        /// A compute executor's queue was full.
        ExecQueueFull = "exec_queue_full",
        /// The F1-U queue was full.
        F1uQueueFull = "f1u_queue_full",
        /// HARQ gave up after the maximum number of retransmissions (lost TB).
        HarqMaxRetx = "harq_max_retx",
        /// No QoS flow / DRB / session matched the packet.
        NoSession = "no_session",
        /// The packet was still inside the system when the run ended (not a drop; reported for
        /// accounting on `in_flight` control rows).
        EndOfRun = "end_of_run",
        /// A link (N3/N6/midhaul) queue was full.
        LinkQueueFull = "link_queue_full",
    }
}

/// One row of `packet_events`: one packet at one checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketEvent {
    /// Nanoseconds since the run's epoch.
    pub t_ns: i64,
    pub node: Node,
    pub layer: Layer,
    pub point: Point,
    pub dir: Dir,
    /// Scout's UE index (stable for the run).
    pub ue: u32,
    /// C-RNTI, where the event is below the CU (DU/UE MAC and RLC).
    pub rnti: Option<u16>,
    /// Data radio bearer id (equals the LCID minus 3 for DRBs in srsRAN's default mapping).
    pub drb: Option<u8>,
    pub qfi: Option<u8>,
    /// Index into the run's slice names (`run.json` `slices`).
    pub slice: u8,
    /// Flow id (index into `run.json` `flows`).
    pub flow: u32,
    /// Packet id, unique in the run.
    pub pkt: u64,
    /// The layer's own sequence number (PDCP COUNT, RLC SN, GTP-U sequence) where it has one.
    pub sn: Option<u32>,
    pub seg_offset: Option<u32>,
    pub seg_last: Option<bool>,
    /// Bytes of the packet (or segment) at this layer, headers of this layer included.
    pub bytes: u32,
    /// The queue an enqueue/dequeue/hol/drop refers to (index into [`QUEUE_NAMES`]).
    pub queue: Option<Queue>,
    /// Queue occupancy after the event.
    pub queue_bytes: Option<u64>,
    pub queue_pkts: Option<u32>,
    /// Retransmission index for `tx`/`segment` (HARQ retx for mac/phy, RLC ARQ retx for rlc).
    pub retx: u8,
    pub reason: Option<Reason>,
    /// The packet's ECN field (0–3) after the event.
    pub ecn: u8,
}

impl PacketEvent {
    /// A packet's event at `at` = (node, layer, point) with only its identity set: UE, flow,
    /// slice and bytes 0, no RNTI, bearer, QFI, sequence number, segment, queue or reason,
    /// first transmission, not ECN-capable. Producers fill in what their layer knows with struct
    /// update syntax: `PacketEvent { ue, bytes, ..PacketEvent::new(t, at, dir, pkt) }`.
    #[inline]
    pub fn new(t_ns: i64, at: (Node, Layer, Point), dir: Dir, pkt: u64) -> Self {
        let (node, layer, point) = at;
        PacketEvent {
            t_ns,
            node,
            layer,
            point,
            dir,
            ue: 0,
            rnti: None,
            drb: None,
            qfi: None,
            slice: 0,
            flow: 0,
            pkt,
            sn: None,
            seg_offset: None,
            seg_last: None,
            bytes: 0,
            queue: None,
            queue_bytes: None,
            queue_pkts: None,
            retx: 0,
            reason: None,
            ecn: 0,
        }
    }
}

dict_enum! {
    /// The named queues of the model, for queue timelines. Compute executors end in `_exec`.
    Queue {
        UpfExec = "upf_exec",
        GtpuRxExec = "gtpu_rx_exec",
        CuupExec = "cuup_exec",
        F1uExec = "f1u_exec",
        PdcpTx = "pdcp_tx",
        F1uTx = "f1u_tx",
        RlcSdu = "rlc_sdu",
        RlcRetx = "rlc_retx",
        PdcpReorder = "pdcp_reorder",
        N3Link = "n3_link",
        N6Link = "n6_link",
        Midhaul = "midhaul",
    }
}

/// The queue names in dictionary order.
pub const QUEUE_NAMES: &[&str] = Queue::NAMES;

/// One row of `slot_events`: a UE's allocation in a slot (one per transmission attempt) or, with
/// `ue == None`, the cell's summary of the slot.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotEvent {
    /// Start of the slot, ns since the epoch.
    pub t_ns: i64,
    /// Absolute slot count since the epoch.
    pub slot: u64,
    pub sfn: u16,
    pub slot_in_frame: u8,
    pub dir: Dir,
    pub ue: Option<u32>,
    pub rnti: Option<u16>,
    pub prbs: u16,
    pub mcs: Option<u8>,
    pub tbs: Option<u32>,
    pub layers: Option<u8>,
    pub harq_id: Option<u8>,
    pub rv: Option<u8>,
    pub ndi: Option<bool>,
    pub retx_index: Option<u8>,
    /// HARQ outcome of this transmission, known k1 (DL) or at PUSCH decoding (UL).
    pub ack: Option<bool>,
    pub bsr_bytes: Option<u64>,
    pub cqi: Option<u8>,
    /// DL: the rank indicator the UE last reported (TS 38.214 §5.2.2.2).
    pub ri: Option<u8>,
    pub sinr_db: Option<f32>,
    /// Cell rows only.
    pub prbs_used: Option<u16>,
    pub prbs_total: Option<u16>,
    pub nof_ues_scheduled: Option<u16>,
}

impl SlotEvent {
    /// A cell row (`ue` null) of slot `slot` (SFN `sfn`, `slot_in_frame`) in direction `dir`,
    /// every other column empty: callers fill in what they know.
    pub fn cell(t_ns: i64, slot: u64, sfn: u16, slot_in_frame: u8, dir: Dir) -> SlotEvent {
        SlotEvent {
            t_ns,
            slot,
            sfn,
            slot_in_frame,
            dir,
            ue: None,
            rnti: None,
            prbs: 0,
            mcs: None,
            tbs: None,
            layers: None,
            harq_id: None,
            rv: None,
            ndi: None,
            retx_index: None,
            ack: None,
            bsr_bytes: None,
            cqi: None,
            ri: None,
            sinr_db: None,
            prbs_used: None,
            prbs_total: None,
            nof_ues_scheduled: None,
        }
    }
}

/// One row of `control_events`: anything with a time that is not a packet at a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlEvent {
    pub t_ns: i64,
    pub node: Node,
    pub layer: Layer,
    /// What the event is.
    pub kind: ControlKind,
    pub dir: Option<Dir>,
    pub ue: Option<u32>,
    pub drb: Option<u8>,
    pub sn: Option<i64>,
    pub value: Option<f64>,
    /// JSON text with the rest.
    pub detail: Option<String>,
}

dict_enum! {
    debug_as_name
    /// The one vocabulary of `control_events.kind`: a closed set, so a producer cannot write a
    /// kind the analysis does not know; the same kind for the same fact whoever observed it.
    /// `docs/schema.md` says what each means and what its `sn`, `value` and `detail` hold. Its
    /// order is the Parquet dictionary's.
    ControlKind {
        // The RAN, from the model and from srsRAN's logs.
        Bsr = "bsr",
        Sr = "sr",
        Grant = "grant",
        RlcStatus = "rlc_status",
        Poll = "poll",
        HarqFail = "harq_fail",
        RetxEvent = "retx_event",
        DeliveryStatus = "delivery_status",
        PdcpDuplicate = "pdcp_duplicate",
        PdcpTReorderingExpired = "pdcp_t_reordering_expired",
        RlcDuplicate = "rlc_duplicate",
        RlcTReassemblyExpired = "rlc_t_reassembly_expired",
        RlcTPollRetransmitExpired = "rlc_t_poll_retransmit_expired",
        PdcpDiscardTimerExpired = "pdcp_discard_timer_expired",
        RlcDiscardTooLate = "rlc_discard_too_late",
        InFlight = "in_flight",
        // Applications and sockets (simulator, emulator).
        AppRtt = "app_rtt",
        TcpInfo = "tcp_info",
        TcpRetransmit = "tcp_retransmit",
        Iperf3 = "iperf3",
        Iperf3Result = "iperf3_result",
        // The core (pcap).
        PfcpPair = "pfcp_pair",
        // srsRAN's own outputs: log gaps, executor traces, metrics.
        LogGap = "log_gap",
        ExecQueueing = "exec_queueing",
        ExecRun = "exec_run",
        TraceSpan = "trace_span",
        TraceInstant = "trace_instant",
        TraceGap = "trace_gap",
        TraceOverflow = "trace_overflow",
        MetricsRlcTx = "metrics_rlc_tx",
        MetricsRlcRx = "metrics_rlc_rx",
        MetricsPdcpDl = "metrics_pdcp_dl",
        MetricsPdcpUl = "metrics_pdcp_ul",
        MetricsMacDl = "metrics_mac_dl",
        MetricsSchedCell = "metrics_sched_cell",
        MetricsSchedUe = "metrics_sched_ue",
        // Reserved.
        Config = "config",
        McsChange = "mcs_change",
        Anbr = "anbr",
        AnbrQuery = "anbr_query",
        Identity = "identity",
        PfcpRequest = "pfcp_request",
        PfcpResponse = "pfcp_response",
        // Delay-based senders' samples (simulator).
        CcSample = "cc_sample",
    }
}

/// Every kind's name, in dictionary order.
pub const CONTROL_KINDS: &[&str] = ControlKind::NAMES;

/// Receives the model's telemetry. The model calls it synchronously; a sink must not fail (a writer
/// that cannot keep up counts what it loses and reports it in `run.json`).
pub trait Sink {
    fn packet(&mut self, ev: PacketEvent);
    fn slot(&mut self, ev: SlotEvent);
    fn control(&mut self, ev: ControlEvent);
}

/// A sink that keeps everything in memory (tests, small runs).
#[derive(Default, Debug)]
pub struct VecSink {
    pub packets: Vec<PacketEvent>,
    pub slots: Vec<SlotEvent>,
    pub controls: Vec<ControlEvent>,
}

impl Sink for VecSink {
    fn packet(&mut self, ev: PacketEvent) {
        self.packets.push(ev);
    }
    fn slot(&mut self, ev: SlotEvent) {
        self.slots.push(ev);
    }
    fn control(&mut self, ev: ControlEvent) {
        self.controls.push(ev);
    }
}

/// A sink that discards everything (benchmarks of the model alone).
#[derive(Default, Debug)]
pub struct NullSink;

impl Sink for NullSink {
    fn packet(&mut self, _: PacketEvent) {}
    fn slot(&mut self, _: SlotEvent) {}
    fn control(&mut self, _: ControlEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_names_round_trip_and_are_unique() {
        fn check(names: &[&str]) {
            let mut sorted = names.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "duplicate name in {names:?}");
        }
        check(Node::NAMES);
        check(Layer::NAMES);
        check(Point::NAMES);
        check(Reason::NAMES);
        check(Queue::NAMES);
        check(ControlKind::NAMES);
        for p in Point::ALL {
            assert_eq!(Point::from_name(p.as_str()), Some(*p));
        }
        assert_eq!(Layer::from_name("rlc"), Some(Layer::Rlc));
        assert_eq!(Layer::from_name("nope"), None);
    }
}
