//! The enum columns' dictionaries, shared by every stage: a part's names as it meets them
//! ([`Names`], [`Ranked`]), the global dictionaries merged from the parts ([`Dict`], [`Dicts`]),
//! and the key of a queue (its node, layer, queue and direction codes).

use std::collections::HashMap;

/// The code of a null enum value.
pub const NULL: u8 = u8::MAX;

/// A column's names, in the order this part met them (code = index).
#[derive(Default, Clone, Debug)]
pub struct Names {
    pub names: Vec<String>,
    index: HashMap<String, u8>,
}

impl Names {
    pub fn code(&mut self, name: &str) -> Option<u8> {
        if let Some(&c) = self.index.get(name) {
            return Some(c);
        }
        // Code 255 is NULL.
        if self.names.len() >= NULL as usize {
            return None;
        }
        let c = self.names.len() as u8;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), c);
        Some(c)
    }
}

/// Names with their sort order, kept current as names are added (SQL `max` of a string column
/// compares names; codes only say which name).
#[derive(Default, Clone, Debug)]
pub struct Ranked {
    pub names: Names,
    /// Rank of each code among the names so far (insertions keep existing codes in order).
    pub rank: Vec<i16>,
}

impl Ranked {
    pub(crate) fn code(&mut self, name: &str) -> Option<u8> {
        let before = self.names.names.len();
        let c = self.names.code(name)?;
        if self.names.names.len() != before {
            let names = &self.names.names;
            let mut order: Vec<usize> = (0..names.len()).collect();
            order.sort_by(|&a, &b| names[a].cmp(&names[b]));
            self.rank = vec![0; names.len()];
            for (r, &i) in order.iter().enumerate() {
                self.rank[i] = r as i16;
            }
        }
        Some(c)
    }

    /// The larger of two codes by name ([`NULL`] is smaller than any name).
    #[inline]
    pub fn max(&self, a: u8, b: u8) -> u8 {
        if b == NULL || (a != NULL && self.rank[a as usize] >= self.rank[b as usize]) {
            a
        } else {
            b
        }
    }
}

#[inline]
pub fn queue_key(node: u8, layer: u8, queue: u8, dir: u8) -> u32 {
    ((node as u32) << 24) | ((layer as u32) << 16) | ((queue as u32) << 8) | dir as u32
}

/// One enum column's names over all parts, and each part's codes mapped onto them.
pub struct Dict {
    pub names: Vec<String>,
    /// Per part, part code → global code.
    remap: Vec<Vec<u8>>,
    /// Global code → rank of the name in sorted order.
    rank: Vec<i16>,
}

impl Dict {
    /// The names of `seed` (earlier windows'), keeping their codes, then the parts' new ones.
    pub(crate) fn merge(seed: &[String], parts: &[&Ranked]) -> Result<Dict, String> {
        let mut all = Names::default();
        for n in seed {
            all.code(n).ok_or("more than 255 distinct values")?;
        }
        let mut remap = Vec::new();
        for part in parts {
            let mut m = Vec::with_capacity(part.names.names.len());
            for n in &part.names.names {
                m.push(all.code(n).ok_or("more than 255 distinct values")?);
            }
            remap.push(m);
        }
        let names = all.names;
        let mut order: Vec<u8> = (0..names.len() as u8).collect();
        order.sort_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
        let mut rank = vec![0i16; names.len()];
        for (r, &c) in order.iter().enumerate() {
            rank[c as usize] = r as i16;
        }
        Ok(Dict { names, remap, rank })
    }

    /// The global code of part `part`'s code ([`NULL`] stays).
    #[inline]
    pub(crate) fn global(&self, part: usize, code: u8) -> u8 {
        if code == NULL {
            NULL
        } else {
            self.remap[part][code as usize]
        }
    }

    /// The larger of two global codes by name ([`NULL`] is smaller than any).
    #[inline]
    pub(crate) fn max(&self, a: u8, b: u8) -> u8 {
        if b == NULL || (a != NULL && self.rank[a as usize] >= self.rank[b as usize]) {
            a
        } else {
            b
        }
    }

    pub fn strs(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }
}

/// The enum columns' global dictionaries.
pub struct Dicts {
    pub dir: Dict,
    pub slice: Dict,
    pub layer: Dict,
    pub reason: Dict,
    pub node: Dict,
    pub queue: Dict,
}

impl Dicts {
    /// Each column's names: dir, slice, layer, reason, node, queue (the seed of the next window's
    /// [`crate::journey::group`], so that codes stay the same from window to window).
    pub fn names(&self) -> [Vec<String>; 6] {
        [&self.dir, &self.slice, &self.layer, &self.reason, &self.node, &self.queue].map(|d| d.names.clone())
    }

    /// Part `part`'s [`crate::queues::queue_key`] (node, layer, queue, dir codes) with global codes.
    pub fn queue_key(&self, part: usize, q: u32) -> u32 {
        queue_key(
            self.node.global(part, (q >> 24) as u8),
            self.layer.global(part, (q >> 16) as u8),
            self.queue.global(part, (q >> 8) as u8),
            self.dir.global(part, q as u8),
        )
    }
}
