//! Scout's real-time emulator: the same sans-IO model the simulator drives (`scout-ran`), driven on
//! the wall clock, with real packets. A network namespace for the data network and one per UE,
//! joined to the emulator by TUN devices: a packet an application sends in a UE's namespace
//! enters the model at the UE's PDCP, one sent in the data network's namespace enters at N6; when
//! the model delivers it, its bytes are written to the other side's TUN device. Every packet is
//! recorded at every layer through the one event writer, exactly as in a simulation.
//!
//! - [`netns`]: namespaces, TUN devices, addresses and routes, and their cleanup;
//! - [`tun`]: a TUN device's file descriptor;
//! - [`driver`]: the wall-clock loop around the model (`driver/run.rs`: an emulation's life around
//!   it, from set-up to the closing summary); [`egress`]: its device writer;
//! - [`thread`]: real-time priority and dropped privileges for the emulator's threads;
//! - [`apps`]: the scenario's applications, started in their namespaces;
//! - [`tcp`]: the applications' TCP state from the kernel's `tcp_probe` tracepoint;
//! - [`packet`]: a packet's flow and ICMP echo; [`timing`]: the clock and the loop's lateness.
//! - [`capture`]: pcap captures of the real UPFs' interfaces (`--capture`).
//! - [`upf`]: a slice's real UPF process (`scout-upf`) in its namespace, linked to the gNB and
//!   the data network.
//! - [`feed`]: the UEs' live RAN feeds; [`feed_client`]: a subscription to one, from Rust.
//!
//! `docs/emulator.md` describes how it works and what it does not model.

pub mod apps;
pub mod capture;
pub mod driver;
pub mod egress;
pub mod feed;
pub mod feed_client;
pub mod iperf3;
pub mod netns;
pub mod offload;
pub mod packet;
pub mod qos;
pub mod tcp;
pub mod thread;
pub mod timing;
pub mod tun;
pub mod upf;

/// What emulators that are gone (killed) left behind, removed by [`remove_stale`].
#[derive(Debug, Default)]
pub struct Stale {
    /// Namespaces removed, with the processes that were still in them.
    pub namespaces: Vec<String>,
    /// tracefs instances removed (their TCP tracepoints were still enabled).
    pub trace_instances: Vec<String>,
    /// Instances that could not be removed, and why.
    pub problems: Vec<String>,
}

/// Removes what emulators that are gone left behind: their namespaces (`netns::remove_stale`) and
/// their tracefs instances (`tcp::remove_stale_instances`). `scout emulate` does it before it
/// starts, `scout cleanup` on its own.
pub fn remove_stale() -> Result<Stale, EmuError> {
    let namespaces = netns::remove_stale()?;
    let (trace_instances, problems) = tcp::remove_stale_instances();
    Ok(Stale { namespaces, trace_instances, problems })
}

#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// Setting up or tearing down the namespaces and devices failed.
    #[error("{what}: {message}")]
    Setup { what: String, message: String },
    #[error(transparent)]
    Sim(#[from] scout_sim::SimError),
    #[error(transparent)]
    Write(#[from] scout_events::writer::WriteError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
