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

/// The kernel's preemption model, as `run.json` records it: whether a real-time thread that
/// wakes (the data path, before a slot) runs at once, or waits until the task running on its CPU
/// leaves the kernel. Under `none` and `voluntary` a system call runs on until it ends or yields
/// (an application's 128 KB `write` to a TCP socket, a TUN device's receive); with four iperf3
/// streams on such a kernel, the data path's wake-ups waited up to ~100 µs at the p99 behind
/// iperf3 and the TCP tracepoint reader (docs/emulator.md).
pub fn kernel_preemption() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let version = read("/proc/sys/kernel/version").unwrap_or_default();
    // debugfs only where it can answer: a PREEMPT_DYNAMIC kernel that is not locked down (lockdown
    // refuses debugfs files that can be written, and logs every refusal in the kernel's log).
    let dynamic = version.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC");
    let debugfs = (dynamic && !locked_down(read("/sys/kernel/security/lockdown").as_deref()))
        .then(|| read("/sys/kernel/debug/sched/preempt"))
        .flatten();
    let (model, source) =
        preemption_model(&version, debugfs.as_deref(), read("/proc/cmdline").as_deref(), kernel_config().as_deref());
    json!({
        "model": model,
        "source": source,
        "note": "none/voluntary: a woken real-time thread waits for the running task to leave the kernel (slots run later under load); full, lazy and rt preempt it at once. A PREEMPT_DYNAMIC kernel takes preempt=full on its command line",
    })
}

/// Whether securityfs's `lockdown` file (`none [integrity] confidentiality`: the mode in force in
/// brackets) says the kernel is locked down; `None` (securityfs not mounted, or no lockdown LSM):
/// not known to be.
fn locked_down(lockdown: Option<&str>) -> bool {
    lockdown.is_some_and(|l| l.contains('[') && !l.contains("[none]"))
}

/// The kernel's build configuration: `/proc/config.gz`, else `/boot/config-RELEASE`.
fn kernel_config() -> Option<String> {
    use std::io::Read;
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        let mut s = String::new();
        if flate2::read::GzDecoder::new(f).read_to_string(&mut s).is_ok() {
            return Some(s);
        }
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()
}

/// The preemption model (`none`, `voluntary`, `full`, `lazy`, `rt`, or `unknown`) and where it was
/// read, from the kernel's version string, its `sched/preempt` debugfs file (the current model in
/// parentheses), its command line and its configuration, in that order of authority: a
/// `PREEMPT_DYNAMIC` kernel boots with its configured model unless `preempt=` says otherwise, and
/// may have been switched since.
fn preemption_model(
    version: &str,
    debugfs: Option<&str>,
    cmdline: Option<&str>,
    config: Option<&str>,
) -> (&'static str, &'static str) {
    const MODELS: [&str; 5] = ["none", "voluntary", "full", "lazy", "rt"];
    let known = |m: &str| MODELS.iter().copied().find(|k| *k == m);
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_RT") {
        return ("rt", "kernel version: PREEMPT_RT");
    }
    let configured = config.and_then(|c| {
        [
            ("CONFIG_PREEMPT_RT=y", "rt"),
            ("CONFIG_PREEMPT_LAZY=y", "lazy"),
            ("CONFIG_PREEMPT=y", "full"),
            ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
            ("CONFIG_PREEMPT_NONE=y", "none"),
        ]
        .into_iter()
        .find(|(line, _)| c.lines().any(|l| l.trim() == *line))
        .map(|(_, m)| m)
    });
    if words.contains(&"PREEMPT_DYNAMIC") {
        let current = debugfs.and_then(|d| {
            let open = d.find('(')?;
            known(d[open + 1..].split(')').next()?)
        });
        if let Some(m) = current {
            return (m, "/sys/kernel/debug/sched/preempt");
        }
        let param = cmdline.and_then(|c| c.split_whitespace().find_map(|w| known(w.strip_prefix("preempt=")?)));
        if let Some(m) = param {
            return (m, "kernel command line: preempt=");
        }
        return match configured {
            Some(m) => (m, "kernel configuration: the PREEMPT_DYNAMIC boot default"),
            None => ("unknown", "PREEMPT_DYNAMIC, configuration not readable"),
        };
    }
    if words.contains(&"PREEMPT") {
        return ("full", "kernel version: PREEMPT");
    }
    match configured {
        Some(m) => (m, "kernel configuration"),
        None => ("unknown", "neither the version nor the configuration says"),
    }
}

#[cfg(test)]
mod tests {
    use super::{locked_down, preemption_model};

    #[test]
    fn a_locked_down_kernel_is_recognised_by_its_lockdown_file() {
        assert!(!locked_down(Some("[none] integrity confidentiality\n")));
        assert!(locked_down(Some("none [integrity] confidentiality\n")));
        assert!(locked_down(Some("none integrity [confidentiality]\n")));
        assert!(!locked_down(Some("")));
        assert!(!locked_down(None));
    }

    #[test]
    fn the_preemption_model_is_read_from_the_most_authoritative_source() {
        let dynamic = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.1-1 (2024-11-22)";
        let none = Some(
            "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n",
        );
        let voluntary = Some("CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n");
        // A dynamic kernel: what debugfs says it runs now, else the command line, else its build.
        assert_eq!(
            preemption_model(dynamic, Some("none voluntary (full) lazy\n"), Some("preempt=none"), none).0,
            "full"
        );
        assert_eq!(preemption_model(dynamic, None, Some("ro quiet preempt=lazy"), none).0, "lazy");
        assert_eq!(preemption_model(dynamic, None, Some("ro preempt=bogus"), voluntary).0, "voluntary");
        assert_eq!(
            preemption_model(dynamic, None, None, none),
            ("none", "kernel configuration: the PREEMPT_DYNAMIC boot default")
        );
        assert_eq!(preemption_model(dynamic, None, None, None).0, "unknown");
        // Fixed models: the version string says RT and full preemption outright.
        assert_eq!(preemption_model("#1 SMP PREEMPT_RT Thu", None, None, none).0, "rt");
        assert_eq!(preemption_model("#1 SMP PREEMPT Thu Nov 7", None, Some("preempt=none"), None).0, "full");
        assert_eq!(preemption_model("#1 SMP Thu Nov 7", None, None, voluntary).0, "voluntary");
        assert_eq!(preemption_model("#1 SMP Thu Nov 7", None, None, None).0, "unknown");
    }
}
