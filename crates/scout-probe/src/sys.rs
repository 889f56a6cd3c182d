//! The Linux facilities the probe and the emulator share: a thread's network namespace switched
//! and restored, and `AF_PACKET` sockets with the kernel's receive timestamps.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};

/// A namespace that could not be entered: what was tried, and the system's error.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct NetnsError {
    pub what: String,
    pub source: std::io::Error,
}

/// The thread's network namespace switched to another until dropped.
pub struct InNetns {
    orig: OwnedFd,
}

impl InNetns {
    /// Enters `netns` (an `ip netns` name, or a path to a namespace file); `None` stays.
    pub fn enter(netns: Option<&str>) -> Result<Option<InNetns>, NetnsError> {
        let Some(ns) = netns else { return Ok(None) };
        let path = if ns.contains('/') { ns.to_string() } else { format!("/var/run/netns/{ns}") };
        let io = |what: String| move |source| NetnsError { what, source };
        let orig: OwnedFd =
            File::open("/proc/thread-self/ns/net").map_err(io("/proc/thread-self/ns/net".into()))?.into();
        let target = File::open(&path).map_err(io(format!("network namespace {ns} ({path})")))?;
        // SAFETY: setns on valid descriptors; it only changes this thread's network namespace.
        if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(NetnsError { what: format!("setns into {ns}"), source: std::io::Error::last_os_error() });
        }
        Ok(Some(InNetns { orig }))
    }
}

impl Drop for InNetns {
    fn drop(&mut self) {
        // SAFETY: as above; back to the namespace the thread was in.
        unsafe { libc::setns(self.orig.as_raw_fd(), libc::CLONE_NEWNET) };
    }
}

/// An `AF_PACKET` socket for every protocol on interface `iface` of the caller's namespace, with
/// receive timestamps (`SO_TIMESTAMPNS`): every frame both ways, as a capture takes them.
pub fn packet_socket(iface: &str) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let proto = (libc::ETH_P_ALL as u16).to_be();
    let name = std::ffi::CString::new(iface).map_err(std::io::Error::other)?;
    // SAFETY: socket(2), owned at once; sockaddr_ll zeroed, then filled, and read by bind(2);
    // setsockopt(2) with a pointer to an int and its size.
    unsafe {
        let raw = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::c_int::from(proto));
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let sock = OwnedFd::from_raw_fd(raw);
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
        if sll.sll_ifindex == 0
            || libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let one: libc::c_int = 1;
        if libc::setsockopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&one as *const libc::c_int).cast(), 4) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(sock)
    }
}

/// One `recvmsg(2)` on `fd` into `buf`: the bytes received and the time in the first
/// `SOL_SOCKET` control message of type `cmsg_type` (`SO_TIMESTAMPNS`, or `SO_TIMESTAMPING`'s
/// software stamp), in ns; `None` when the call failed (nothing waiting, a timeout). With
/// `MSG_TRUNC` in `flags`, the length is the frame's, which may exceed `buf`.
pub fn recv_timestamped(
    fd: libc::c_int,
    buf: &mut [u8],
    flags: libc::c_int,
    cmsg_type: libc::c_int,
) -> Option<(usize, Option<i64>)> {
    let mut cmsg = [0u8; 512];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: recvmsg into our buffers (msghdr zeroed, then pointed at them); the control
    // messages are walked with the CMSG macros within `cmsg`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = cmsg.len();
        let n = libc::recvmsg(fd, &mut msg, flags);
        if n < 0 {
            return None;
        }
        let mut t = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() && t.is_none() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == cmsg_type {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                t = Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        Some((n as usize, t))
    }
}
