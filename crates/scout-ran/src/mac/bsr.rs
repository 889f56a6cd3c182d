//! Buffer status reporting tables, TS 38.321 §6.1.3.1.

/// TS 38.321 Table 6.1.3.1-1: upper bound in bytes of each 5-bit Buffer Size index 0–30
/// (index 31 means > 150 000 bytes).
pub const BSR_5BIT: [u32; 31] = [
    0, 10, 14, 20, 28, 38, 53, 74, 102, 142, 198, 276, 384, 535, 745, 1038, 1446, 2014, 2806, 3909, 5446, 7587, 10570,
    14726, 20516, 28581, 39818, 55474, 77284, 107669, 150000,
];

/// TS 38.321 Table 6.1.3.1-2: upper bound in bytes of each 8-bit Buffer Size index 0–253
/// (index 254 means > 81 338 368 bytes; 255 is reserved).
pub const BSR_8BIT: [u32; 254] = [
    0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 25, 26, 28, 30, 32, 34, 36, 38, 40, 43, 46, 49, 52, 55, 59,
    62, 66, 71, 75, 80, 85, 91, 97, 103, 110, 117, 124, 132, 141, 150, 160, 170, 181, 193, 205, 218, 233, 248, 264,
    281, 299, 318, 339, 361, 384, 409, 436, 464, 494, 526, 560, 597, 635, 677, 720, 767, 817, 870, 926, 987, 1051,
    1119, 1191, 1269, 1351, 1439, 1532, 1631, 1737, 1850, 1970, 2098, 2234, 2379, 2533, 2698, 2873, 3059, 3258, 3469,
    3694, 3934, 4189, 4461, 4751, 5059, 5387, 5737, 6109, 6506, 6928, 7378, 7857, 8367, 8910, 9488, 10104, 10760,
    11458, 12202, 12994, 13838, 14736, 15692, 16711, 17795, 18951, 20181, 21491, 22885, 24371, 25953, 27638, 29431,
    31342, 33376, 35543, 37850, 40307, 42923, 45709, 48676, 51836, 55200, 58784, 62599, 66663, 70990, 75598, 80505,
    85730, 91295, 97221, 103532, 110252, 117409, 125030, 133146, 141789, 150992, 160793, 171231, 182345, 194182,
    206786, 220209, 234503, 249725, 265935, 283197, 301579, 321155, 342002, 364202, 387842, 413018, 439827, 468377,
    498780, 531156, 565634, 602350, 641449, 683087, 727427, 774645, 824928, 878475, 935498, 996222, 1060888, 1129752,
    1203085, 1281179, 1364342, 1452903, 1547213, 1647644, 1754595, 1868488, 1989774, 2118933, 2256475, 2402946,
    2558924, 2725027, 2901912, 3090279, 3290873, 3504487, 3731968, 3974215, 4232186, 4506902, 4799451, 5110989,
    5442750, 5796046, 6172275, 6572925, 6999582, 7453933, 7937777, 8453028, 9001725, 9586039, 10208280, 10870913,
    11576557, 12328006, 13128233, 13980403, 14887889, 15854280, 16883401, 17979324, 19146385, 20389201, 21712690,
    23122088, 24622972, 26221280, 27923336, 29735875, 31666069, 33721553, 35910462, 38241455, 40723756, 43367187,
    46182206, 49179951, 52372284, 55771835, 59392055, 63247269, 67352729, 71724679, 76380419, 81338368,
];

/// BSR format: Short BSR (5-bit field, one LCG) or Long BSR (8-bit fields), TS 38.321 §6.1.3.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BsrFormat {
    Short,
    Long,
}

impl BsrFormat {
    fn table(self) -> &'static [u32] {
        match self {
            BsrFormat::Short => &BSR_5BIT,
            BsrFormat::Long => &BSR_8BIT,
        }
    }

    /// The Buffer Size index reporting `bytes`: the smallest index whose upper bound is ≥ `bytes`,
    /// or the "greater than" index past the table.
    pub fn index(self, bytes: u64) -> u8 {
        let t = self.table();
        t.iter().position(|b| u64::from(*b) >= bytes).unwrap_or(t.len()) as u8
    }

    /// The bytes the gNB assumes for an index: the upper bound of its range (srsRAN does the
    /// same); the "greater than" index maps to twice the last bound.
    pub fn bytes(self, index: u8) -> u64 {
        let t = self.table();
        match t.get(usize::from(index)) {
            Some(b) => u64::from(*b),
            None => 2 * u64::from(*t.last().expect("tables are non-empty")),
        }
    }

    /// Size of the MAC CE with its subheader, TS 38.321 §6.1.2 and §6.1.3.1: Short BSR is a 1-byte CE
    /// with a 1-byte subheader; Long BSR with one LCG has a bitmap byte and one 8-bit field after a
    /// 2-byte subheader.
    pub fn ce_bytes(self) -> u32 {
        match self {
            BsrFormat::Short => 2,
            BsrFormat::Long => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_6_1_3_1_1_values() {
        assert_eq!(BsrFormat::Short.index(0), 0);
        assert_eq!(BsrFormat::Short.index(1), 1);
        assert_eq!(BsrFormat::Short.index(10), 1);
        assert_eq!(BsrFormat::Short.index(11), 2);
        assert_eq!(BsrFormat::Short.index(1500), 17);
        assert_eq!(BsrFormat::Short.index(150_000), 30);
        assert_eq!(BsrFormat::Short.index(150_001), 31);
        assert_eq!(BsrFormat::Short.bytes(17), 2014);
    }

    #[test]
    fn table_6_1_3_1_2_values() {
        assert_eq!(BSR_8BIT.len(), 254);
        assert!(BSR_8BIT.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(BsrFormat::Long.index(14), 5);
        assert_eq!(BsrFormat::Long.index(117), 39);
        assert_eq!(BsrFormat::Long.index(81_338_368), 253);
        assert_eq!(BsrFormat::Long.index(81_338_369), 254);
        assert_eq!(BsrFormat::Long.bytes(43), 150);
        // The reported bound never under-states the buffer.
        for b in [1u64, 9, 100, 999, 12_345, 1_000_000, 50_000_000] {
            assert!(BsrFormat::Long.bytes(BsrFormat::Long.index(b)) >= b);
            assert!(BsrFormat::Short.bytes(BsrFormat::Short.index(b)) >= b.min(150_001));
        }
    }
}
