//! What the emulator's threads run with once set up: a real-time priority where the process may
//! have one, and no privilege.

use serde_json::{json, Value};

/// Gives the calling thread `SCHED_FIFO` priority `priority` (1–99) and a timer slack of 1 ns
/// (`ppoll` wakes when asked, not up to 50 µs later); returns whether the priority was granted.
/// Children forked from it start as ordinary threads (`SCHED_RESET_ON_FORK`). The kernel's RT
/// throttling (95 % of each second by default) keeps the machine responsive whatever it does.
pub fn realtime(priority: i32) -> bool {
    // SAFETY: prctl(2) with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: sched_setscheduler(2) of the calling thread with a valid parameter.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) == 0 }
}

/// The unprivileged user the emulator's threads run as (the kernel's overflow uid and gid, `nobody`).
const NOBODY: libc::uid_t = 65_534;

/// Leaves the calling thread with no privilege: supplementary groups cleared, group and user
/// `nobody` (which clears its capabilities), no new privileges on exec. Credentials are per thread
/// in Linux: the raw system calls change only this thread's (glibc's wrappers change every
/// thread's). What it still holds: the descriptors opened before — the TUN devices, the
/// `tcp_probe` pipe — and its channels to the other threads. Returns what it now runs with.
pub fn drop_privileges() -> Value {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return json!({"dropped": false, "why_not": "not running as root"});
    }
    // SAFETY: setgroups/setresgid/setresuid/prctl system calls with valid arguments, on this thread.
    let ok = unsafe {
        libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) == 0
            && libc::syscall(libc::SYS_setresgid, NOBODY, NOBODY, NOBODY) == 0
            && libc::syscall(libc::SYS_setresuid, NOBODY, NOBODY, NOBODY) == 0
            && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    };
    if ok {
        json!({"dropped": true, "uid": NOBODY, "gid": NOBODY, "capabilities": [], "no_new_privs": true,
               "holds": "the TUN devices' and the tcp_probe pipe's open descriptors; channels to the other threads"})
    } else {
        json!({"dropped": false, "why_not": std::io::Error::last_os_error().to_string()})
    }
}

/// The kernel's PM QoS interface for the CPUs' wake-up latency.
const CPU_LATENCY_DEVICE: &str = "/dev/cpu_dma_latency";

/// Asks that no CPU enter an idle state that takes any time to leave while the emulation runs: a
/// PM QoS request of 0 µs on `/dev/cpu_dma_latency`, as `cyclictest` and tuned's
/// `latency-performance` profile make. An idle CPU then polls instead of halting (on a VM:
/// instead of handing its vCPU back to the host), and the timer that ends the data path's sleep
/// before a slot finds it running. Without it, on the 2-vCPU VMs Scout is measured on, such a
/// sleep ended from 40 µs to 1.5 ms late (instrumented: most of the slots late by more than
/// 100 µs with four iperf3 streams had slept through their time); on bare metal, deep C-states
/// take 50–200 µs to leave. The request is the whole machine's, and holds exactly while the
/// returned file is open: the kernel drops it when the descriptor closes, a crash included.
/// Returns the file (if granted) and what `run.json` records.
pub fn hold_cpu_wakeup_latency() -> (Option<std::fs::File>, Value) {
    use std::io::Write;
    let opened = std::fs::OpenOptions::new().write(true).open(CPU_LATENCY_DEVICE);
    // The device takes the latency in µs as a binary 32-bit integer.
    match opened.and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|()| f)) {
        Ok(f) => (Some(f), json!({"held": true, "max_us": 0, "device": CPU_LATENCY_DEVICE})),
        Err(e) => (None, json!({"held": false, "device": CPU_LATENCY_DEVICE, "why_not": e.to_string()})),
    }
}
