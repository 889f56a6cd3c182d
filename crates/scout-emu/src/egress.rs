//! The device writer: the packets the model delivered, written to the TUN devices — by a thread
//! of their own (`scout-egress`) under load, by the data path itself when little is waiting.
//!
//! A write to a TUN device is where the kernel does the receiving side's work, in the writer's
//! system call: the receiver's TCP takes the data in and answers, and a sender's TCP that is handed
//! ACKs transmits its next segments. On the data path's thread that work stood between the model
//! and its slots: with four iperf3 streams one loop's writes took up to 2 ms (p99.99 0.5 ms), and
//! each such write made the next slots late. So the data path hands each turn's deliveries over
//! as one batch, in delivery order, and this thread writes them; but a handover costs a thread's
//! wake-up (some 40 µs here), which an idle cell would add to every ping, so a batch of a few
//! packets while the thread has nothing left to write is written at once by the data path
//! ([`Egress::inline`]). Either way a [`DeviceWriter`] joins a flow's segments again through
//! offload devices ([`Coalescer`]), writes them and measures how late each packet was written
//! (when written minus when the model delivered it).

use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use crate::netns::Topology;
use crate::offload::{Coalescer, Partial};
use crate::timing::{mono_ns, Lateness};
use crate::tun::Tun;

/// A batch of at most this many packets is written by the data path itself while the device
/// writer's thread has nothing left to write.
pub const INLINE_MAX: usize = 4;

/// The device writer thread's ends: the batches to write, the buffers written, the count of
/// batches not yet written.
pub type ThreadSide = (Receiver<Vec<Out>>, Sender<Vec<Vec<u8>>>, Arc<AtomicUsize>);

/// A packet the model delivered: the device it leaves by (the DN's, then each UE's), when the
/// model delivered it (emulator time) and its bytes.
pub struct Out {
    pub dev: usize,
    pub t: i64,
    pub bytes: Vec<u8>,
    pub partial: Partial,
}

/// Writes packets to the devices, joining segments per device, and counts what happened.
pub struct DeviceWriter<'t> {
    devices: Vec<Option<&'t Tun>>,
    coalescers: Vec<Coalescer>,
    t0: i64,
    /// Lateness of every packet written: when written minus when the model delivered it.
    pub late: Lateness,
    /// Packets a device's full queue refused.
    pub device_full: u64,
    pub error: Option<io::Error>,
}

impl<'t> DeviceWriter<'t> {
    pub fn new(topo: &'t Topology, t0: i64) -> Self {
        let devices: Vec<Option<&Tun>> = (0..=topo.ues.len()).map(|i| topo.device(i)).collect();
        let coalescers = devices.iter().map(|_| Coalescer::default()).collect();
        DeviceWriter { devices, coalescers, t0, late: Lateness::default(), device_full: 0, error: None }
    }

    /// Writes one packet (through offload devices, into its flow's run); its buffer goes to
    /// `spent`.
    pub fn push(&mut self, out: Out, spent: &mut Vec<Vec<u8>>) {
        self.late.add(mono_ns() - self.t0 - out.t);
        if let Some(tun) = self.devices.get(out.dev).copied().flatten() {
            let (full, error) = (&mut self.device_full, &mut self.error);
            if tun.vnet {
                let c = &mut self.coalescers[out.dev];
                c.push(out.bytes, out.partial, &mut |parts: &[IoSlice<'_>]| {
                    counted(tun.write_parts(parts), full, error)
                });
                c.take_written(spent);
                return;
            }
            counted(tun.write(&out.bytes), full, error);
        }
        spent.push(out.bytes);
    }

    /// Writes the runs still open; their buffers go to `spent`.
    pub fn flush(&mut self, spent: &mut Vec<Vec<u8>>) {
        for (c, tun) in self.coalescers.iter_mut().zip(&self.devices) {
            if let Some(tun) = tun {
                let (full, error) = (&mut self.device_full, &mut self.error);
                c.flush(&mut |parts: &[IoSlice<'_>]| counted(tun.write_parts(parts), full, error));
                c.take_written(spent);
            }
        }
    }

    /// Packets written to offload devices, and the writes that carried them.
    pub fn segments_and_writes(&self) -> (u64, u64) {
        (self.coalescers.iter().map(|c| c.segments).sum(), self.coalescers.iter().map(|c| c.writes).sum())
    }

    /// Adds what `other` wrote to this one's counts.
    pub fn absorb(&mut self, other: DeviceWriter<'_>) {
        self.late.absorb(&other.late);
        self.device_full += other.device_full;
        for (c, o) in self.coalescers.iter_mut().zip(&other.coalescers) {
            c.segments += o.segments;
            c.writes += o.writes;
        }
        self.error = self.error.take().or(other.error);
    }
}

/// The data path's side: hands batches to the device writer's thread, or writes a small one
/// itself when that thread has nothing left to write.
pub struct Egress<'t> {
    /// `None` once hung up (the thread then ends when it has written what it holds).
    tx: Option<Sender<Vec<Out>>>,
    spent: Receiver<Vec<Vec<u8>>>,
    /// Batches handed to the thread and not yet written.
    pending: Arc<AtomicUsize>,
    /// The data path's own writer, for small batches.
    pub inline: DeviceWriter<'t>,
    /// Batches written inline and handed over.
    pub inline_batches: u64,
    pub handed_over: u64,
}

impl<'t> Egress<'t> {
    /// The data path's side, and what the thread needs: its end of the channels and the count
    /// of batches pending.
    pub fn new(topo: &'t Topology, t0: i64) -> (Egress<'t>, ThreadSide) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (spent_tx, spent) = std::sync::mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let thread_side = (rx, spent_tx, Arc::clone(&pending));
        let egress = Egress {
            tx: Some(tx),
            spent,
            pending,
            inline: DeviceWriter::new(topo, t0),
            inline_batches: 0,
            handed_over: 0,
        };
        (egress, thread_side)
    }

    /// Writes `batch` (in delivery order); the buffers written so far come back into `pool`.
    pub fn send(&mut self, batch: Vec<Out>, pool: &mut Vec<Vec<u8>>) {
        for bufs in self.spent.try_iter() {
            pool.extend(bufs);
        }
        if batch.is_empty() {
            return;
        }
        // Inline only while nothing handed over is still unwritten: the order holds.
        if batch.len() <= INLINE_MAX && self.pending.load(Ordering::Acquire) == 0 {
            for out in batch {
                self.inline.push(out, pool);
            }
            self.inline.flush(pool);
            self.inline_batches += 1;
            return;
        }
        // A writer gone has ended on an error, which it hands back at the end.
        if let Some(tx) = &self.tx {
            self.pending.fetch_add(1, Ordering::AcqRel);
            self.handed_over += 1;
            if tx.send(batch).is_err() {
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Hangs up: the thread ends when it has written what it holds.
    pub fn hang_up(&mut self) {
        self.tx = None;
    }
}

/// The device writer's thread: writes what arrives on `rx` until the data path hangs up; sends
/// every buffer back on `spent`. A write error other than a full queue ends the emulation
/// (`stop`) and is handed back.
pub fn run<'t>(topo: &'t Topology, t0: i64, (rx, spent, pending): ThreadSide, stop: &AtomicBool) -> DeviceWriter<'t> {
    let mut w = DeviceWriter::new(topo, t0);
    while let Ok(first) = rx.recv() {
        // Whatever else is waiting joins this round: its segments may join theirs.
        let mut back = Vec::with_capacity(first.len());
        let mut batches = 0;
        for batch in std::iter::once(first).chain(rx.try_iter()) {
            batches += 1;
            for out in batch {
                w.push(out, &mut back);
            }
        }
        w.flush(&mut back);
        pending.fetch_sub(batches, Ordering::AcqRel);
        if w.error.is_some() {
            stop.store(true, Ordering::Relaxed);
        }
        // The data path may have ended already; its pool then goes with it.
        _ = spent.send(back);
    }
    w
}

/// A write's result, counted: a full device queue in `full`, the first error kept.
fn counted(result: io::Result<bool>, full: &mut u64, error: &mut Option<io::Error>) {
    match result {
        Ok(true) => {}
        Ok(false) => *full += 1,
        Err(e) => *error = error.take().or(Some(e)),
    }
}
