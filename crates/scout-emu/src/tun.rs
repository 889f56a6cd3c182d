//! A TUN device: IP packets in and out of a file descriptor, without the packet-information
//! header (`IFF_NO_PI`), non-blocking. A device that is not made persistent disappears with its
//! last descriptor, so the emulator's devices go when it does, however it ends.
//!
//! With offloads ([`Tun::create`] `offload`), every packet is preceded by a `virtio_net_hdr`
//! (`IFF_VNET_HDR`) and the kernel may hand over and take TCP super-packets of up to 64 KiB with
//! their checksums left to complete (`TUNSETOFFLOAD` with `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 |
//! TUN_F_TSO_ECN`): see [`crate::offload`].

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `TUNSETIFF` (`_IOW('T', 202, int)`, linux/if_tun.h).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `TUNSETOFFLOAD` (`_IOW('T', 208, unsigned int)`) and its flags (linux/if_tun.h).
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUN_F_CSUM: libc::c_ulong = 0x01;
const TUN_F_TSO4: libc::c_ulong = 0x02;
const TUN_F_TSO6: libc::c_ulong = 0x04;
const TUN_F_TSO_ECN: libc::c_ulong = 0x08;

/// `struct ifreq` as `TUNSETIFF` reads it: the name, then the flags.
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
    pub name: String,
    /// Packets carry a `virtio_net_hdr` and may be TCP super-packets.
    pub vnet: bool,
}

impl Tun {
    /// Creates the TUN device `name` (at most 15 bytes) in the caller's namespace, with TCP
    /// segmentation and checksum offloads when `offload` is set.
    pub fn create(name: &str, offload: bool) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
        }
        // SAFETY: a plain open(2) of a path; the descriptor is owned at once.
        let raw = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
        }
        // SAFETY: `raw` is a descriptor we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let flags = IFF_TUN | IFF_NO_PI | if offload { IFF_VNET_HDR } else { 0 };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags, _pad: [0; 22] };
        for (d, s) in req.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads a `struct ifreq`, which `IfReq` lays out (40 bytes).
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        if offload {
            let f = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
            // SAFETY: TUNSETOFFLOAD takes its flags by value.
            if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, f) } < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("TUNSETOFFLOAD {name}: {e}")));
            }
        }
        Ok(Tun { fd, name: name.to_string(), vnet: offload })
    }

    /// Reads one packet into `buf`; `None` when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }

    /// Writes one packet; `false` when the device's queue is full (the packet is dropped there,
    /// as a full transmit queue drops it).
    pub fn write(&self, pkt: &[u8]) -> io::Result<bool> {
        // SAFETY: writes `pkt.len()` bytes from `pkt`.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
        sent(n)
    }

    /// Writes one packet gathered from `parts` (a virtio header, headers, payloads: the kernel
    /// copies each part once, with no copy in user space); `false` as [`Tun::write`].
    pub fn write_parts(&self, parts: &[std::io::IoSlice<'_>]) -> io::Result<bool> {
        // SAFETY: `IoSlice` is ABI-compatible with `struct iovec`; `parts.len()` of them are read.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), parts.as_ptr().cast(), parts.len() as libc::c_int) };
        sent(n)
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// What a write's return value `n` says: written, dropped by a full queue (`false`), or an error.
fn sent(n: isize) -> io::Result<bool> {
    if n >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Ok(false),
        // The device is down or gone from its namespace (the emulation is ending).
        _ if e.raw_os_error() == Some(libc::EIO) => Ok(false),
        _ => Err(e),
    }
}
