//! A column of the profiles' component rows (about 11 per packet, 13 bytes each: the largest part
//! of what the analysis keeps for the whole run) that, when the analysis is short of memory, is
//! appended to a file window by window and mapped back for the profiles: the kernel's memory stays
//! what one window needs, the rows live in the page cache, which the kernel may evict and read
//! back. The file is unlinked as soon as it is created, so nothing is left behind.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::Error;

/// Plain values a file holds byte for byte.
pub trait Plain: Copy + Default {}
impl Plain for u8 {}
impl Plain for u32 {}
impl Plain for i64 {}

/// One column: the rows in memory, then (after [`Spillable::spill`]) those in its file.
#[derive(Default)]
pub struct Spillable<T: Plain> {
    mem: Vec<T>,
    file: Option<(File, PathBuf)>,
    spilled: usize,
    map: Option<Mmap>,
}

impl<T: Plain> Spillable<T> {
    pub fn with_capacity(n: usize) -> Self {
        Spillable { mem: Vec::with_capacity(n), file: None, spilled: 0, map: None }
    }

    #[inline]
    pub fn push(&mut self, v: T) {
        self.mem.push(v);
    }

    pub fn len(&self) -> usize {
        self.spilled + self.mem.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the rows held in memory to the column's file, `dir/name` (created and unlinked at
    /// the first call), and empties the memory (its buffer kept for the next window).
    pub fn spill(&mut self, dir: &Path, name: &str) -> Result<(), Error> {
        if self.file.is_none() {
            let path = dir.join(name);
            let io = |e| Error::Io { path: path.clone(), source: e };
            let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path);
            let f = f.map_err(io)?;
            std::fs::remove_file(&path).map_err(io)?;
            self.file = Some((f, path));
        }
        self.write_out()
    }

    /// Appends the rows held in memory to the open file and empties the memory.
    fn write_out(&mut self) -> Result<(), Error> {
        let Some((f, path)) = self.file.as_mut() else { return Ok(()) };
        // SAFETY: `T` is a plain integer (`Plain`): its bytes are its value, with no padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(self.mem.as_ptr().cast::<u8>(), std::mem::size_of_val(self.mem.as_slice()))
        };
        f.write_all(bytes).map_err(|e| Error::Io { path: path.clone(), source: e })?;
        self.spilled += self.mem.len();
        self.mem.clear();
        Ok(())
    }

    /// After the last [`Spillable::spill`]: maps the file, so that [`Spillable::as_slice`] gives
    /// every row. Without a file, nothing to do: the rows are in memory.
    pub fn seal(&mut self) -> Result<(), Error> {
        if self.file.is_none() {
            return Ok(());
        }
        self.write_out()?;
        self.mem = Vec::new();
        let (f, path) = self.file.as_ref().expect("checked above");
        if self.spilled > 0 {
            // SAFETY: the file is this process's own, unlinked: nobody else can change it.
            let map = unsafe { Mmap::map(f) }.map_err(|e| Error::Io { path: path.clone(), source: e })?;
            self.map = Some(map);
        }
        Ok(())
    }

    /// Every row: in memory, or mapped from the file once sealed.
    pub fn as_slice(&self) -> &[T] {
        match &self.map {
            // SAFETY: the map holds `spilled` values of `T` written by `spill`, and a mapping is
            // page-aligned (aligned for `T`).
            Some(m) => unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<T>(), self.spilled) },
            None => {
                assert!(self.file.is_none() || self.spilled == 0, "spilled rows read before `seal`");
                &self.mem
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_rows_read_back_in_order() {
        let dir = std::env::temp_dir().join(format!("scout-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c: Spillable<i64> = Spillable::with_capacity(4);
        for w in 0..3i64 {
            for i in 0..1000 {
                c.push(w * 1000 + i);
            }
            c.spill(&dir, "ns").unwrap();
        }
        c.push(3000);
        c.seal().unwrap();
        assert_eq!(c.len(), 3001);
        assert!(c.as_slice().iter().copied().eq(0..3001));
        // The file was unlinked at once: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let mut m: Spillable<u8> = Spillable::default();
        m.push(7);
        m.seal().unwrap();
        assert_eq!(m.as_slice(), &[7]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
