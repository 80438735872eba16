//! Simulated vector files for the persisted-graph tests: the navigation file and, when the
//! graph keeps a float copy beside its binary codes, the full-vector file, each a
//! [`SimulatedIo`] whose durable image stands for what a power loss leaves.
//!
//! Invariant: `full` exists exactly when the graph's parameters store full vectors in their
//! own file (binary quantization that keeps a float copy).

use storage_engine::io::{PageIo, SimulatedIo};
use storage_engine::vector::GraphParameters;
use storage_engine::vector::store::VectorBackends;
use storage_engine::vector::store::graph::FileBackends;

/// Size of each simulated file.
pub const SIMULATED_FILE_BYTES: usize = 8 << 20;

pub struct Files {
    pub navigation: SimulatedIo,
    pub full: Option<SimulatedIo>,
}

impl Files {
    pub fn new(parameters: &GraphParameters, seed: u64) -> Self {
        let full = (parameters.binary_quantized && parameters.keeps_full_vectors())
            .then(|| SimulatedIo::new(SIMULATED_FILE_BYTES, seed + 1));
        Files {
            navigation: SimulatedIo::new(SIMULATED_FILE_BYTES, seed),
            full,
        }
    }

    pub fn backends(&self) -> FileBackends {
        VectorBackends {
            navigation: Box::new(self.navigation.clone()) as Box<dyn PageIo>,
            full: self
                .full
                .as_ref()
                .map(|io| Box::new(io.clone()) as Box<dyn PageIo>),
        }
        .into()
    }

    /// What a power loss right now leaves of the vector files.
    pub fn after_power_loss(&self) -> Files {
        let image = |io: &SimulatedIo| {
            SimulatedIo::from_image(&io.durable_image(), SIMULATED_FILE_BYTES, 0)
        };
        Files {
            navigation: image(&self.navigation),
            full: self.full.as_ref().map(image),
        }
    }
}
