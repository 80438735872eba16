//! Weighted choice of a request template, driven by a small deterministic
//! pseudo-random generator so that a run is reproducible from its seed.
//!
//! Invariant: a template with weight `w` is picked with probability
//! `w / total` (up to the negligible modulo bias of a 64-bit draw), and a
//! template of weight zero is never picked.

/// SplitMix64: tiny, fast and good enough to spread requests over templates.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }
}

/// Picks an index with probability proportional to its weight.
#[derive(Debug, Clone)]
pub struct WeightedPicker {
    /// `cumulative[i]` = sum of the weights of templates `0..=i`.
    cumulative: Vec<u64>,
}

impl WeightedPicker {
    /// `None` when there is nothing to pick (no weights, or all zero).
    pub fn new(weights: &[u32]) -> Option<WeightedPicker> {
        let mut total = 0u64;
        let cumulative: Vec<u64> = weights
            .iter()
            .map(|weight| {
                total += u64::from(*weight);
                total
            })
            .collect();
        (total > 0).then_some(WeightedPicker { cumulative })
    }

    /// The sum of all weights (never zero).
    pub fn total(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// The index chosen by the random draw `random`.
    pub fn pick(&self, random: u64) -> usize {
        let point = random % self.total();
        self.cumulative.partition_point(|bound| *bound <= point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_weights_are_never_picked_and_shares_follow_weights() {
        let seed = 42;
        println!("seed {seed}");
        let picker = WeightedPicker::new(&[1, 0, 3]).expect("non-zero total");
        let mut random = SplitMix64::new(seed);
        let mut counts = [0u64; 3];
        let draws = 40_000;
        for _ in 0..draws {
            counts[picker.pick(random.next_u64())] += 1;
        }
        assert_eq!(counts[1], 0);
        let share = counts[2] as f64 / draws as f64;
        assert!(
            (share - 0.75).abs() < 0.02,
            "share of weight 3 of 4 was {share}"
        );
    }

    #[test]
    fn all_zero_weights_have_no_picker() {
        assert!(WeightedPicker::new(&[0, 0]).is_none());
        assert!(WeightedPicker::new(&[]).is_none());
    }

    #[test]
    fn boundaries_map_to_the_right_template() {
        let picker = WeightedPicker::new(&[2, 1]).expect("non-zero total");
        assert_eq!(picker.pick(0), 0);
        assert_eq!(picker.pick(1), 0);
        assert_eq!(picker.pick(2), 1);
        assert_eq!(picker.pick(3), 0);
    }
}
