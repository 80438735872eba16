//! A small deterministic pseudo-random generator (SplitMix64) for level sampling and tests.
//!
//! Invariant: the sequence depends only on the seed, so graphs built from the same inputs and
//! seed are identical, and failing tests can be replayed from the seed they print.

/// SplitMix64 state.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The current state, to persist and resume the sequence later.
    pub fn state(&self) -> u64 {
        self.state
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// A uniform float in the open interval (0, 1).
    pub fn next_unit_f64(&mut self) -> f64 {
        // 53 random bits, shifted by half a step so that 0 never comes out.
        ((self.next_u64() >> 11) as f64 + 0.5) / (1_u64 << 53) as f64
    }

    /// A uniform float in [-1, 1).
    pub fn next_signed_f32(&mut self) -> f32 {
        (self.next_unit_f64() * 2.0 - 1.0) as f32
    }

    /// A standard normal sample (Box-Muller).
    pub fn next_gaussian_f32(&mut self) -> f32 {
        let radius = (-2.0 * self.next_unit_f64().ln()).sqrt();
        let angle = std::f64::consts::TAU * self.next_unit_f64();
        (radius * angle.cos()) as f32
    }

    /// A uniform integer in `0..bound` (`bound > 0`).
    pub fn next_below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "an empty range has no element to draw");
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}
