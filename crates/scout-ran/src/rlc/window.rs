//! The AM transmitter's SDUs awaiting acknowledgement, by SN (TS 38.322 §5.2.3.1.1: from
//! TX_Next_Ack up to TX_Next).
//!
//! SNs are given out in order and acknowledged mostly from the lowest up, so the window is a ring
//! of slots indexed by SN: finding an SN is an index, and a STATUS that acknowledges thousands of
//! SNs at once (one every few milliseconds at Gbit/s rates) walks its slots in order instead of a
//! tree's nodes — a tree spent ~30 ns per SN there, in one model action of ~100 µs that made the
//! emulator's slots late. A slot of an SN no longer held (acknowledged, or dropped while a lower
//! one is still held) stays empty until the slots before it are gone; the ring never holds more
//! slots than the SNs between the lowest and the highest held, at most AM_Window_Size.

use std::collections::VecDeque;

pub(super) struct TxWindow<T> {
    /// The SN of `slots[0]`.
    base: u32,
    /// Held entries by SN from `base`; the first and the last are never empty.
    slots: VecDeque<Option<T>>,
    held: usize,
}

impl<T> Default for TxWindow<T> {
    fn default() -> Self {
        TxWindow { base: 0, slots: VecDeque::new(), held: 0 }
    }
}

impl<T> TxWindow<T> {
    /// Entries held.
    pub(super) fn len(&self) -> usize {
        self.held
    }

    /// The lowest SN held.
    pub(super) fn first_sn(&self) -> Option<u32> {
        (self.held > 0).then_some(self.base)
    }

    fn index(&self, sn: u32) -> Option<usize> {
        let i = sn.checked_sub(self.base)? as usize;
        (i < self.slots.len()).then_some(i)
    }

    pub(super) fn get(&self, sn: u32) -> Option<&T> {
        self.slots.get(self.index(sn)?)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, sn: u32) -> Option<&mut T> {
        let i = self.index(sn)?;
        self.slots[i].as_mut()
    }

    /// The entry of `sn`, made from `make` if there is none.
    pub(super) fn get_or_insert_with(&mut self, sn: u32, make: impl FnOnce() -> T) -> &mut T {
        if self.slots.is_empty() {
            self.base = sn;
        } else if sn < self.base {
            for _ in sn..self.base {
                self.slots.push_front(None);
            }
            self.base = sn;
        }
        let i = (sn - self.base) as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let slot = &mut self.slots[i];
        if slot.is_none() {
            self.held += 1;
        }
        slot.get_or_insert_with(make)
    }

    pub(super) fn remove(&mut self, sn: u32) -> Option<T> {
        let i = self.index(sn)?;
        let e = self.slots[i].take()?;
        self.held -= 1;
        self.trim();
        Some(e)
    }

    /// The highest SN held and its entry.
    pub(super) fn last_mut(&mut self) -> Option<(u32, &mut T)> {
        let sn = self.base + self.slots.len().checked_sub(1)? as u32;
        Some((sn, self.slots.back_mut()?.as_mut()?))
    }

    /// Removes, in SN order, every entry below `end` that `keep` does not keep, handing each to
    /// `removed`.
    pub(super) fn remove_below(
        &mut self,
        end: u32,
        mut keep: impl FnMut(u32, &T) -> bool,
        mut removed: impl FnMut(u32, T),
    ) {
        let n = (end.saturating_sub(self.base) as usize).min(self.slots.len());
        for (i, slot) in self.slots.iter_mut().take(n).enumerate() {
            let sn = self.base + i as u32;
            if slot.as_ref().is_some_and(|e| !keep(sn, e)) {
                removed(sn, slot.take().expect("checked"));
                self.held -= 1;
            }
        }
        self.trim();
    }

    /// Drops the empty slots at both ends.
    fn trim(&mut self) {
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base += 1;
        }
        while self.slots.back().is_some_and(Option::is_none) {
            self.slots.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::TxWindow;

    /// The window and a map of the same entries agree after every operation of a long mixed
    /// sequence (in order inserts, a STATUS's acknowledgements with holes kept, single removals at
    /// either end and inside, an insert below the lowest SN held).
    #[test]
    fn behaves_as_a_map_by_sn() {
        let mut w = TxWindow::default();
        let mut m = BTreeMap::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut sn = 100u32;
        for step in 0..20_000 {
            match next() % 8 {
                0..=3 => {
                    *w.get_or_insert_with(sn, || sn * 10) += 1;
                    *m.entry(sn).or_insert(sn * 10) += 1;
                    sn += 1 + (next() % 3 == 0) as u32;
                }
                4 => {
                    // A STATUS: everything below `end` but what `keep` keeps (odd values here).
                    let end = sn.saturating_sub((next() % 40) as u32);
                    let mut got = Vec::new();
                    w.remove_below(end, |_, v| v % 2 == 1, |s, v| got.push((s, v)));
                    let want: Vec<(u32, u32)> =
                        m.range(..end).filter(|(_, v)| **v % 2 == 0).map(|(k, v)| (*k, *v)).collect();
                    want.iter().for_each(|(k, _)| _ = m.remove(k));
                    assert_eq!(got, want, "step {step}");
                }
                5 => {
                    let k = m.keys().nth((next() % (m.len() as u64 + 1)) as usize).copied().unwrap_or(sn);
                    assert_eq!(w.remove(k), m.remove(&k), "step {step}");
                }
                6 => {
                    if let (Some((s, v)), Some((ks, kv))) = (w.last_mut(), m.iter_mut().next_back()) {
                        assert_eq!((s, *v), (*ks, *kv), "step {step}");
                        *v += 2;
                        *kv += 2;
                    }
                }
                _ => {
                    let below = m.keys().next().map_or(sn, |&k| k.saturating_sub(1 + (next() % 3) as u32));
                    *w.get_or_insert_with(below, || 7) += 0;
                    m.entry(below).or_insert(7);
                }
            }
            assert_eq!(w.len(), m.len(), "step {step}");
            assert_eq!(w.first_sn(), m.keys().next().copied(), "step {step}");
            let probe = (next() % (u64::from(sn) + 5)) as u32;
            assert_eq!(w.get(probe), m.get(&probe), "step {step}");
            assert!(w.slots.len() <= (sn - w.base + 1) as usize || w.held == 0);
        }
    }
}
