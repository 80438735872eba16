//! A one-line description of the machine a benchmark ran on, read from `/proc`: CPUs, CPU
//! model, memory, kernel, and the load average when the run started.
//!
//! Invariant: a field that cannot be read is printed as `?`, never guessed.

/// Bytes per gibibyte (`/proc/meminfo` reports kB).
const KIBIBYTES_PER_GIBIBYTE: f64 = 1024.0 * 1024.0;

fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

fn memory_gibibytes() -> Option<f64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kibibytes: f64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kibibytes / KIBIBYTES_PER_GIBIBYTE)
}

fn first_line(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().next().map(|line| line.trim().to_string())
}

/// The description, e.g. `2 CPUs (AMD EPYC …), 23.4 GiB, Linux 6.1.0, load average 0.12 0.30 0.41`.
pub fn describe_machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let load = first_line("/proc/loadavg").map(|line| {
        line.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    });
    format!(
        "{cpus} CPUs ({}), {} GiB, Linux {}, load average at the start {}",
        cpu_model().unwrap_or_else(|| "?".to_string()),
        memory_gibibytes().map_or("?".to_string(), |gibibytes| format!("{gibibytes:.1}")),
        first_line("/proc/sys/kernel/osrelease").unwrap_or_else(|| "?".to_string()),
        load.unwrap_or_else(|| "?".to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_the_cpus_and_the_kernel() {
        let description = describe_machine();
        assert!(description.contains("CPUs ("), "{description}");
        assert!(description.contains("Linux "), "{description}");
    }
}
