//! The deterministic generator the crate's unit tests draw their inputs from (xorshift64*):
//! the same seed gives the same sequence on every machine, so a failing case can be replayed.

/// A small deterministic generator (xorshift64*).
pub struct Random(pub u64);

impl Random {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `bound` (at most `u32::MAX + 1`).
    pub fn below(&mut self, bound: u64) -> u32 {
        (self.next() % bound) as u32
    }
}
