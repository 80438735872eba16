//! Where each instance of a local network runs: the CPUs it is pinned to and the cores it is
//! told to use, so that every configuration shares the machine the same way.
//!
//! Rule: with `instances` instances on `machine_cpus` CPUs, each instance gets
//! `max(1, machine_cpus / instances)` consecutive CPUs, instance `i` starting at CPU
//! `i * width mod machine_cpus`, and uses as many cores as it has CPUs. One instance takes
//! the whole machine; more instances than CPUs wrap around and share CPUs (on 2 CPUs, 4
//! instances run two to a CPU). Invariants: every CPU list is non-empty and within
//! `0..machine_cpus`; `cores` equals the list's length.

/// The CPUs and cores of one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The CPUs, as a `taskset -c` list (`0`, `0,1`).
    pub cpu_list: String,
    /// Cores the instance uses (coresearch `--cores`, Meilisearch `--max-indexing-threads`).
    pub cores: usize,
}

/// The placement of instance `instance` of `instances` on a machine of `machine_cpus` CPUs.
pub fn placement(instance: usize, instances: usize, machine_cpus: usize) -> Placement {
    let machine_cpus = machine_cpus.max(1);
    let width = (machine_cpus / instances.max(1)).max(1);
    let first = (instance * width) % machine_cpus;
    let cpus: Vec<String> = (first..first + width)
        .map(|cpu| (cpu % machine_cpus).to_string())
        .collect();
    Placement {
        cpu_list: cpus.join(","),
        cores: width,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(instances: usize, machine_cpus: usize) -> Vec<(String, usize)> {
        (0..instances)
            .map(|instance| {
                let placement = placement(instance, instances, machine_cpus);
                (placement.cpu_list, placement.cores)
            })
            .collect()
    }

    #[test]
    fn one_instance_takes_the_machine_and_more_instances_share_it_evenly() {
        assert_eq!(lists(1, 2), [("0,1".to_string(), 2)]);
        assert_eq!(lists(2, 2), [("0".to_string(), 1), ("1".to_string(), 1)]);
        assert_eq!(
            lists(4, 2),
            [
                ("0".to_string(), 1),
                ("1".to_string(), 1),
                ("0".to_string(), 1),
                ("1".to_string(), 1)
            ]
        );
        assert_eq!(
            lists(2, 8),
            [("0,1,2,3".to_string(), 4), ("4,5,6,7".to_string(), 4)]
        );
    }
}
