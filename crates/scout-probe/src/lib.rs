//! `scout probe`: Scout's TC-BPF programs (`bpf/upf_probe.bpf.c`) attached to a UPF's N3 and N6
//! interfaces inside their network namespaces, and the user-space half that turns their pairs
//! into a run: one journey per packet through the UPF (`n3|n6 arrive` → `upf proc_end`), as
//! `scout ingest pcap` writes from captures (`docs/probe.md`).
//!
//! In the kernel each program computes the packet's identity (the same key as the pcap reader,
//! `scout_wire::ip::identity`), pairs the N3 and N6 sightings of a packet in a
//! set-associative table (least recently inserted out per set) and sends each pair through a ring
//! buffer (or, in histogram mode, counts its delay in a per-CPU log2 histogram). Every sighting the
//! kernel gives up is counted there, per side and reason. User space reads the pairs, the programs'
//! counters, the sightings still waiting when the probe ends, and the kernel's own run-time
//! statistics (`BPF_ENABLE_STATS`) for the probe's cost per packet.

use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use aya::maps::{Array, MapData, PerCpuArray, RingBuf};
use aya::programs::tc::TcAttachOptions;
use aya::programs::{tc, LinkOrder, SchedClassifier, TcAttachType};
use aya::{Ebpf, EbpfLoader, Pod};
pub mod pfcp_live;
mod run;
mod running;
pub mod sys;
pub mod testbench;

pub use run::{run, Progress};
pub use running::Running;
pub use sys::{packet_socket, recv_timestamped, InNetns};

use serde_json::{json, Value};

/// The compiled probe (clang -target bpf -g), when clang was available at build time.
#[cfg(probe_object)]
pub static OBJECT: Option<&[u8]> = Some(aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/upf_probe.bpf.o")));
#[cfg(not(probe_object))]
pub static OBJECT: Option<&[u8]> = None;

/// Counter names, in the order of the program's `struct counters`.
pub const COUNTERS: [&str; 15] = [
    "n3_sightings",
    "n6_sightings",
    "pairs",
    "ringbuf_full",
    "duplicates",
    "not_ip",
    "not_gtpu",
    "gtpu_not_gpdu",
    "malformed",
    "expired_n3",
    "expired_n6",
    "evicted_n3",
    "evicted_n6",
    "busy_n3",
    "busy_n6",
];

/// Ways per set of the program's pending table (`WAYS`).
pub const WAYS: usize = 28;
/// The pending table's default size in sets (`--table-sets`): 7 168 sightings in 240 KiB, enough
/// for 14 ms of queue at 500 000 packets/s. Sized to stay in a core's L2 cache: a second sighting
/// reads the slot its twin wrote, and on the 2-vCPU bench machine a 1 024-set table (960 KiB) cost
/// ~20-30 ns more per sighting than this one (bench/RESULTS.md). Too small shows as `table_full`.
pub const DEFAULT_TABLE_SETS: u32 = 256;
/// The ring buffers (`pairs0` to `pairs3`): a CPU writes to ring `cpu % 4`.
const RINGS: [&str; 4] = ["pairs0", "pairs1", "pairs2", "pairs3"];
/// Each ring's size: 4 MiB, about 50 000 pair records.
const RING_BYTES: u32 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Usage(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{what}: {message}")]
    Bpf { what: String, message: String },
    #[error(transparent)]
    Write(#[from] scout_events::writer::WriteError),
}

impl From<sys::NetnsError> for ProbeError {
    fn from(e: sys::NetnsError) -> Self {
        ProbeError::Io { what: e.what, source: e.source }
    }
}

fn bpf_err(what: impl Into<String>) -> impl FnOnce(Box<dyn std::error::Error>) -> ProbeError {
    let what = what.into();
    move |e| ProbeError::Bpf { what, message: error_chain(&*e) }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// An interface, in a named network namespace (`ip netns` name or a path to a netns file) or in
/// the probe's own: `NETNS:IFACE` or `IFACE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Side {
    pub netns: Option<String>,
    pub iface: String,
}

impl Side {
    pub fn parse(s: &str) -> Result<Side, ProbeError> {
        let (ns, ifc) = match s.rsplit_once(':') {
            Some((n, i)) => (Some(n.to_string()), i),
            None => (None, s),
        };
        if ifc.is_empty() || ifc.len() > 15 || ns.as_deref() == Some("") {
            return Err(ProbeError::Usage(format!(
                "`{s}`: expected NETNS:IFACE or IFACE (interface names have 1 to 15 characters)"
            )));
        }
        Ok(Side { netns: ns, iface: ifc.to_string() })
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.netns {
            Some(n) => write!(f, "{n}:{}", self.iface),
            None => f.write_str(&self.iface),
        }
    }
}

/// One UPF: its N3 and N6 interfaces and the slice it serves.
#[derive(Clone, Debug)]
pub struct Upf {
    pub n3: Side,
    pub n6: Side,
    pub slice: String,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub upfs: Vec<Upf>,
    pub duration: Option<Duration>,
    /// Only the per-CPU delay histograms, no per-packet records (very high rates).
    pub histogram_only: bool,
    pub window: Duration,
    pub gtp_port: u16,
    /// Interfaces whose PFCP (N4) is captured live and paired.
    pub pfcp: Vec<Side>,
    /// Sets in the kernel's pending table (a power of two; each holds [`WAYS`] sightings); with
    /// [`Pairing::SameCpu`], per CPU.
    pub table_sets: u32,
    pub pairing: Pairing,
    /// A tap that sees every event as it is written (the live view, `scout-live`).
    pub live: Option<scout_events::tap::SharedTap>,
}

/// Where a packet's two sightings may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// On any CPUs: one table shared by all, a lock per set (a UPF that forwards in user space,
    /// where the thread that sends a packet need not run on the CPU that received it).
    AnyCpu,
    /// On the same CPU: a table per CPU, no locks, no cache line moving between CPUs (a UPF that
    /// forwards in the kernel: gtp5g, eBPF/XDP UPFs, OVS). Pairs split across CPUs are not made:
    /// their sightings count as unmatched.
    SameCpu,
}

impl Pairing {
    pub fn parse(s: &str) -> Result<Pairing, ProbeError> {
        match s {
            "any-cpu" => Ok(Pairing::AnyCpu),
            "same-cpu" => Ok(Pairing::SameCpu),
            o => Err(ProbeError::Usage(format!("--pairing {o}: expected any-cpu or same-cpu"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Pairing::AnyCpu => "any-cpu",
            Pairing::SameCpu => "same-cpu",
        }
    }
}

impl Default for Options {
    /// No UPF yet; otherwise the CLI's defaults.
    fn default() -> Options {
        Options {
            upfs: vec![],
            duration: None,
            histogram_only: false,
            window: Duration::from_secs(2),
            gtp_port: 2152,
            pfcp: vec![],
            table_sets: DEFAULT_TABLE_SETS,
            pairing: Pairing::AnyCpu,
            live: None,
        }
    }
}

impl Options {
    fn check(&self) -> Result<(), ProbeError> {
        if !self.table_sets.is_power_of_two() || !(16..=1 << 18).contains(&self.table_sets) {
            return Err(ProbeError::Usage(format!(
                "--table-sets {}: expected a power of two from 16 to 262144 (each set holds {WAYS} sightings)",
                self.table_sets
            )));
        }
        if self.window.is_zero() || self.window > Duration::from_secs(3600) {
            return Err(ProbeError::Usage(format!(
                "--window {} s: expected more than 0 and at most 3600 s",
                self.window.as_secs_f64()
            )));
        }
        Ok(())
    }
}

/// The ARPHRD type of an interface in the current namespace (1 Ethernet, 65534 none: TUN).
fn arphrd(iface: &str) -> Result<u16, ProbeError> {
    // SAFETY: a datagram socket and the SIOCGIFHWADDR ioctl on a zeroed ifreq with the name set.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(ProbeError::Io { what: "socket".into(), source: std::io::Error::last_os_error() });
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in iface.bytes().take(15).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        let r = libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if r < 0 {
            return Err(ProbeError::Io { what: format!("interface {iface}"), source: err });
        }
        Ok(ifr.ifr_ifru.ifru_hwaddr.sa_family)
    }
}

/// A waiting sighting (`struct slot`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    key: u64,
    t_ns: u64,
    teid: u32,
    bytes: u32,
    seq: u16,
    side: u8,
    qfi: u8,
    has_seq: u8,
    pad: [u8; 3],
}

/// One set of the pending table (`struct set`): a line of tags, then the ways' sightings.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Set {
    tags: [u64; WAYS / 4],
    pad: u64,
    slot: [Slot; WAYS],
}
// SAFETY: plain old data, laid out as `struct set` in the program.
unsafe impl Pod for Set {}

/// A set's occupancy word (`occupancy` in the program): bits 0-27 the ways that hold a sighting.
const OCC_MASK: u64 = (1 << WAYS) - 1;

type Counters = [u64; COUNTERS.len()];

/// The sightings still waiting in a pending table, per side (N3, N6): those that have waited
/// longer than the window, and the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    pub beyond_window: [u64; 2],
    pub within_window: [u64; 2],
}

/// Where a set's occupancy word is in `occupancy`: word `set << occ_shift` (a shared table gives each
/// set's word a cache line of its own; see `occ_shift` in the program).
fn occ_shift(pairing: Pairing) -> u32 {
    match pairing {
        Pairing::SameCpu => 0,
        Pairing::AnyCpu => 3,
    }
}

/// Reads every set of `pending` (an `Array` of [`Set`]) whose `occupancy` word says it holds a
/// sighting, at `now` (bpf_ktime, ns); the keys waiting too, when `keys` is given. `None` when the
/// table could not be read.
fn read_pending(
    bpf: &Ebpf,
    pairing: Pairing,
    window_ns: u64,
    now: u64,
    mut keys: Option<&mut Vec<u64>>,
) -> Option<Waiting> {
    let a = Array::<_, Set>::try_from(bpf.map("pending")?).ok()?;
    let occ = Array::<_, u64>::try_from(bpf.map("occupancy")?).ok()?;
    let shift = occ_shift(pairing);
    let mut w = Waiting::default();
    for i in 0..a.len() {
        let held = occ.get(&(i << shift), 0).ok()? & OCC_MASK;
        if held == 0 {
            continue;
        }
        let s = a.get(&i, 0).ok()?;
        for way in (0..WAYS).filter(|&way| held >> way & 1 == 1) {
            let o = &s.slot[way];
            let side = usize::from(o.side & 1);
            if now.saturating_sub(o.t_ns) > window_ns {
                w.beyond_window[side] += 1;
            } else {
                w.within_window[side] += 1;
            }
            if let Some(k) = keys.as_deref_mut() {
                k.push(o.key);
            }
        }
    }
    Some(w)
}

/// Loads the probe object with `opts`' settings (not yet verified or attached).
fn load_object(opts: &Options) -> Result<Ebpf, ProbeError> {
    let obj = OBJECT.ok_or_else(|| ProbeError::Usage(
        "this build has no probe object: clang was not found when Scout was built (apt-get install clang libbpf-dev, then rebuild)".into(),
    ))?;
    opts.check()?;
    let histogram_only = u32::from(opts.histogram_only);
    let gtp_port = u32::from(opts.gtp_port);
    let set_mask = opts.table_sets - 1;
    let window_ns = opts.window.as_nanos() as u64;
    let per_cpu = u32::from(opts.pairing == Pairing::SameCpu);
    let cpu_shift = opts.table_sets.trailing_zeros();
    let occ_shift = occ_shift(opts.pairing);
    let tables = if per_cpu == 1 {
        aya::util::nr_cpus().map_err(|(what, e)| ProbeError::Io { what: what.into(), source: e })? as u32
    } else {
        1
    };
    let mut loader = EbpfLoader::new();
    loader
        .set_global("histogram_only", &histogram_only, true)
        .set_global("gtp_port", &gtp_port, true)
        .set_global("set_mask", &set_mask, true)
        .set_global("window_ns", &window_ns, true)
        .set_global("per_cpu", &per_cpu, true)
        .set_global("cpu_shift", &cpu_shift, true)
        .set_global("occ_shift", &occ_shift, true)
        .set_max_entries("pending", opts.table_sets * tables)
        .set_max_entries("occupancy", (opts.table_sets * tables) << occ_shift);
    // Histogram mode sends nothing to user space: one page per ring.
    let ring = if opts.histogram_only { 4096 } else { RING_BYTES };
    for r in RINGS {
        loader.set_max_entries(r, ring);
    }
    loader.load(obj).map_err(|e| bpf_err("loading the probe")(Box::new(e)))
}

/// A pair record as the program writes it (`struct pair`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PairRecord {
    pub key: u64,
    pub t_first: u64,
    pub t_second: u64,
    pub teid: u32,
    pub bytes_first: u32,
    pub bytes_second: u32,
    pub first_side: u8,
    pub qfi: u8,
    pub v6: u8,
    pub proto: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: u16,
    pub dport: u16,
    pub gtp_seq: u16,
    pub has_seq: u8,
    pub pad: u8,
}

// SAFETY: plain old data, laid out as `struct pair` in the program.
unsafe impl Pod for PairRecord {}

/// Pairs staged on one CPU (`struct batch`), sent to the ring [`BATCH`] at a time.
#[repr(C)]
#[derive(Clone, Copy)]
struct Batch {
    n: u32,
    pad: u32,
    t_first: u64,
    rec: [PairRecord; BATCH],
}
// SAFETY: plain old data, laid out as `struct batch` in the program.
unsafe impl Pod for Batch {}

/// Pairs per ring-buffer record (`BATCH`).
const BATCH: usize = 32;

impl PairRecord {
    /// The pairs in one ring-buffer item (a batch of them, back to back).
    fn all_in(b: &[u8]) -> impl Iterator<Item = PairRecord> + '_ {
        b.chunks_exact(std::mem::size_of::<PairRecord>())
            // SAFETY: each chunk holds a `struct pair`; read unaligned.
            .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<PairRecord>()) })
    }
    fn addr(&self, a: &[u8; 16]) -> IpAddr {
        if self.v6 == 1 {
            IpAddr::from(*a)
        } else {
            IpAddr::from([a[0], a[1], a[2], a[3]])
        }
    }
}

/// Whether TC programs attach through TCX links (Linux 6.6+), as aya does where it can.
fn tcx_available() -> bool {
    aya::util::KernelVersion::current().is_ok_and(|v| v >= aya::util::KernelVersion::new(6, 6, 0))
}

/// One UPF's loaded probe.
struct Loaded {
    upf: Upf,
    bpf: Ebpf,
    rings: Vec<RingBuf<MapData>>,
    links: Vec<(Option<String>, &'static str, aya::programs::tc::SchedClassifierLinkId)>,
    /// Interfaces where the probe added the clsact qdisc (removed again on detach).
    clsact_added: Vec<Side>,
}

fn now_mono_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn now_real_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn load(upf: &Upf, opts: &Options) -> Result<Loaded, ProbeError> {
    let mut bpf = load_object(opts)?;
    let mut links = Vec::new();
    let mut clsact_added = Vec::new();
    for (side, n3) in [(&upf.n3, true), (&upf.n6, false)] {
        let _ns = InNetns::enter(side.netns.as_deref())?;
        let l3 = !n3 && arphrd(&side.iface)? != 1;
        // An existing clsact qdisc is kept (EEXIST); one the probe adds is removed when it detaches.
        if tc::qdisc_add_clsact(&side.iface).is_ok() {
            clsact_added.push(side.clone());
        }
        for (ingress, name) in match (n3, l3) {
            (true, _) => [(true, "n3_ingress"), (false, "n3_egress")],
            (false, false) => [(true, "n6_ingress"), (false, "n6_egress")],
            (false, true) => [(true, "n6_l3_ingress"), (false, "n6_l3_egress")],
        } {
            let prog: &mut SchedClassifier = bpf
                .program_mut(name)
                .expect("program in the object")
                .try_into()
                .map_err(|e| bpf_err(name)(Box::new(e)))?;
            if prog.fd().is_err() {
                prog.load().map_err(|e| bpf_err(format!("verifying {name}"))(Box::new(e)))?;
            }
            let at = if ingress { TcAttachType::Ingress } else { TcAttachType::Egress };
            // With TCX (Linux 6.6+; aya uses it there) the ingress program goes before every other
            // one, the egress program after (aya's default): a packet is seen as it arrives,
            // before a forwarding program (an eBPF UPF) can redirect it past the probe, and as it
            // leaves, after whatever else runs at egress. Older kernels: netlink filters, in the
            // order attached.
            let id = if ingress && tcx_available() {
                prog.attach_with_options(&side.iface, at, TcAttachOptions::TcxOrder(LinkOrder::first()))
            } else {
                prog.attach(&side.iface, at)
            }
            .map_err(|e| bpf_err(format!("attaching {name} to {side}"))(Box::new(e)))?;
            links.push((side.netns.clone(), name, id));
        }
    }
    let mut rings = Vec::new();
    if !opts.histogram_only {
        for r in RINGS {
            rings.push(
                RingBuf::try_from(bpf.take_map(r).expect("ring map"))
                    .map_err(|e| bpf_err("ring buffer")(Box::new(e)))?,
            );
        }
    }
    Ok(Loaded { upf: upf.clone(), bpf, rings, links, clsact_added })
}

impl Loaded {
    fn detach(&mut self) {
        for (ns, name, id) in self.links.drain(..) {
            let Ok(_g) = InNetns::enter(ns.as_deref()) else { continue };
            if let Some(Ok(p)) = self.bpf.program_mut(name).map(<&mut SchedClassifier>::try_from) {
                let _ = p.detach(id);
            }
        }
        for side in self.clsact_added.drain(..) {
            let Ok(_g) = InNetns::enter(side.netns.as_deref()) else { continue };
            // `tc` started from this thread runs in its network namespace.
            let _ = std::process::Command::new("tc").args(["qdisc", "del", "dev", &side.iface, "clsact"]).output();
        }
    }

    fn counters(&self) -> Vec<u64> {
        counters(&self.bpf)
    }

    fn histogram(&self) -> [[u64; 64]; 2] {
        let mut h = [[0u64; 64]; 2];
        if let Ok(a) = PerCpuArray::<_, u64>::try_from(self.bpf.map("hist").expect("hist map")) {
            for i in 0..128u32 {
                h[(i / 64) as usize][(i % 64) as usize] = a.get(&i, 0).map(|v| v.iter().sum()).unwrap_or(0);
            }
        }
        h
    }

    /// The programs' run time and run count from the kernel's statistics.
    fn cost(&self) -> Vec<Value> {
        let mut v = Vec::new();
        for (_, name, _) in &self.links {
            let Some(p) = self.bpf.program(name) else { continue };
            let Ok(p) = <&SchedClassifier>::try_from(p) else { continue };
            if let Ok(info) = p.info() {
                let (ns, cnt) = (info.run_time().as_nanos() as u64, info.run_count());
                v.push(json!({"program": name, "run_count": cnt, "run_time_ns": ns, "ns_per_packet": if cnt > 0 { Some(ns as f64 / cnt as f64) } else { None }}));
            }
        }
        v
    }
}

/// The floor any TC program is charged by the kernel's accounting, for the bench: attaches
/// `program` (`floor_empty`, which does nothing, or `floor_clock`, which only reads the clock as
/// each sighting does once) to the ingress of `upf`'s N3 and N6, runs `during`, and returns the
/// program's run count and run time from `BPF_ENABLE_STATS`.
pub fn floor_cost(upf: &Upf, program: &'static str, during: impl FnOnce()) -> Result<(u64, u64), ProbeError> {
    if !matches!(program, "floor_empty" | "floor_clock") {
        return Err(ProbeError::Usage(format!("{program}: expected floor_empty or floor_clock")));
    }
    let stats_fd =
        aya::sys::enable_stats(aya::sys::Stats::RunTime).map_err(|e| bpf_err("BPF_ENABLE_STATS")(Box::new(e)))?;
    let mut l = Loaded {
        upf: upf.clone(),
        bpf: load_object(&Options::default())?,
        rings: vec![],
        links: vec![],
        clsact_added: vec![],
    };
    let prog: &mut SchedClassifier =
        l.bpf.program_mut(program).expect("program").try_into().map_err(|e| bpf_err(program)(Box::new(e)))?;
    prog.load().map_err(|e| bpf_err(format!("verifying {program}"))(Box::new(e)))?;
    for side in [&upf.n3, &upf.n6] {
        let _ns = InNetns::enter(side.netns.as_deref())?;
        if tc::qdisc_add_clsact(&side.iface).is_ok() {
            l.clsact_added.push(side.clone());
        }
        let id = prog
            .attach(&side.iface, TcAttachType::Ingress)
            .map_err(|e| bpf_err(format!("attaching {program} to {side}"))(Box::new(e)))?;
        l.links.push((side.netns.clone(), program, id));
    }
    during();
    let info = prog.info().map_err(|e| bpf_err(program)(Box::new(e)))?;
    let cost = (info.run_count(), info.run_time().as_nanos() as u64);
    l.detach();
    drop(stats_fd);
    Ok(cost)
}

/// The pairs staged on every CPU and not yet sent to a ring (`None` when the map cannot be read).
fn staged(bpf: &Ebpf) -> Option<Vec<PairRecord>> {
    let a = PerCpuArray::<_, Batch>::try_from(bpf.map("staged")?).ok()?;
    let v = a.get(&0, 0).ok()?;
    Some(v.iter().flat_map(|b| b.rec[..(b.n as usize).min(BATCH)].iter().copied()).collect())
}

/// The programs' counters, summed over the CPUs, in the order of [`COUNTERS`] (empty when the map
/// cannot be read).
fn counters(bpf: &Ebpf) -> Vec<u64> {
    let Some(m) = bpf.map("stats") else { return vec![] };
    let Ok(a) = PerCpuArray::<_, Counters>::try_from(m) else { return vec![] };
    let Ok(v) = a.get(&0, 0) else { return vec![] };
    (0..COUNTERS.len()).map(|i| v.iter().map(|c| c[i]).sum()).collect()
}

/// The probe's programs run in the kernel on frames given to them (`BPF_PROG_TEST_RUN`), with their
/// real table, counters and ring buffers: for checking the kernel's identity key and pairing.
/// Needs root.
pub struct Harness {
    bpf: Ebpf,
    window_ns: u64,
    pairing: Pairing,
}

impl Harness {
    /// Loads the object with `opts`' settings and verifies the Ethernet programs and the floor's.
    pub fn new(opts: &Options) -> Result<Harness, ProbeError> {
        let mut bpf = load_object(opts)?;
        for name in ["n3_ingress", "n3_egress", "n6_ingress", "n6_egress", "floor_empty", "floor_clock"] {
            let prog: &mut SchedClassifier =
                bpf.program_mut(name).expect("program").try_into().map_err(|e| bpf_err(name)(Box::new(e)))?;
            prog.load().map_err(|e| bpf_err(format!("verifying {name}"))(Box::new(e)))?;
        }
        Ok(Harness { bpf, window_ns: opts.window.as_nanos() as u64, pairing: opts.pairing })
    }

    /// Runs `program` (`n3_ingress`, `n3_egress`, `n6_ingress`, `n6_egress`, or the floor's
    /// `floor_empty` or `floor_clock`) once on `frame`, an Ethernet frame; returns how long the run
    /// took by the kernel's clock (ns; the kernel's timer is included: for comparing program
    /// versions, not an absolute cost).
    pub fn run(&self, program: &str, frame: &[u8]) -> Result<u32, ProbeError> {
        use std::os::fd::AsFd;
        let prog: &SchedClassifier = self
            .bpf
            .program(program)
            .ok_or_else(|| ProbeError::Usage(format!("no program {program}")))?
            .try_into()
            .map_err(|e| bpf_err(program)(Box::new(e)))?;
        let fd = prog.fd().map_err(|e| bpf_err(program)(Box::new(e)))?.as_fd().as_raw_fd();
        // union bpf_attr, test: prog_fd, retval, data_size_in, data_size_out, data_in, data_out,
        // repeat, duration, ctx_size_in, ctx_size_out, ctx_in, ctx_out, flags, cpu, batch_size.
        #[repr(C)]
        #[derive(Default)]
        struct TestRun {
            prog_fd: u32,
            retval: u32,
            data_size_in: u32,
            data_size_out: u32,
            data_in: u64,
            data_out: u64,
            repeat: u32,
            duration: u32,
            ctx_size_in: u32,
            ctx_size_out: u32,
            ctx_in: u64,
            ctx_out: u64,
            flags: u32,
            cpu: u32,
            batch_size: u32,
            pad: u32,
        }
        let mut attr = TestRun {
            prog_fd: fd as u32,
            data_size_in: frame.len() as u32,
            data_in: frame.as_ptr() as u64,
            repeat: 1,
            ..TestRun::default()
        };
        // SAFETY: the bpf(2) syscall with BPF_PROG_TEST_RUN (10) and an attribute block it reads and
        // writes the results (retval, duration) into.
        let r = unsafe { libc::syscall(libc::SYS_bpf, 10, &mut attr as *mut TestRun, std::mem::size_of::<TestRun>()) };
        if r != 0 {
            return Err(ProbeError::Io { what: "BPF_PROG_TEST_RUN".into(), source: std::io::Error::last_os_error() });
        }
        Ok(attr.duration)
    }

    /// The counters, by name.
    pub fn counters(&self) -> std::collections::BTreeMap<&'static str, u64> {
        COUNTERS.iter().copied().zip(counters(&self.bpf)).collect()
    }

    /// The pairs staged on every CPU, not yet sent to a ring.
    pub fn staged(&self) -> Result<Vec<PairRecord>, ProbeError> {
        staged(&self.bpf)
            .ok_or_else(|| ProbeError::Bpf { what: "staged pairs".into(), message: "could not be read".into() })
    }

    /// The sightings waiting in the table now, and their keys.
    pub fn waiting(&self) -> Result<(Waiting, Vec<u64>), ProbeError> {
        let mut keys = Vec::new();
        let w = read_pending(&self.bpf, self.pairing, self.window_ns, now_mono_ns() as u64, Some(&mut keys))
            .ok_or_else(|| ProbeError::Bpf { what: "pending table".into(), message: "could not be read".into() })?;
        Ok((w, keys))
    }
}

/// The identity key the kernel program computes for one frame: runs the N3 (G-PDU) or N6 (plain
/// IP) ingress program once on `frame` (an Ethernet frame) and reads the key of the sighting it
/// stored. For checking that the kernel and `scout_wire::ip::identity` agree. Needs
/// root.
pub fn kernel_identity(frame: &[u8], n3: bool) -> Result<Option<u64>, ProbeError> {
    let h = Harness::new(&Options::default())?;
    h.run(if n3 { "n3_ingress" } else { "n6_ingress" }, frame)?;
    Ok(h.waiting()?.1.first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_parse_with_and_without_a_namespace() {
        assert_eq!(Side::parse("upf:eth0").unwrap(), Side { netns: Some("upf".into()), iface: "eth0".into() });
        assert_eq!(Side::parse("ogstun").unwrap(), Side { netns: None, iface: "ogstun".into() });
        assert!(Side::parse("upf:").is_err());
        assert!(Side::parse("x:averyveryverylongname").is_err());
    }

    #[test]
    fn the_pair_record_matches_the_programs_layout() {
        // struct pair in upf_probe.bpf.c: 8*3 + 4*3 + 4 + 32 + 2*3 + 2 = 80 bytes; struct slot 32,
        // struct set 15 cache lines.
        assert_eq!(std::mem::size_of::<PairRecord>(), 80);
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert_eq!(std::mem::size_of::<Set>(), 15 * 64);
        assert_eq!(std::mem::size_of::<Counters>(), 8 * 15);
        assert_eq!(std::mem::size_of::<Batch>(), 16 + 32 * 80);
    }
}
