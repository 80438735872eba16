//! The vector benchmark: data, the store's measurements, hnswlib through its Python package,
//! kernel timings. See `src/bin/vector_bench.rs` for usage.

pub mod dataset;
pub mod files;
pub mod measure;
pub mod store_bench;

use dataset::{Dataset, ground_truth};
use std::path::PathBuf;
use std::time::Instant;
use storage_engine::vector::{kernels, scalar};

/// Beam widths swept.
const EF_SWEEP: [usize; 7] = [10, 20, 40, 80, 120, 200, 400];

struct Config {
    dataset: String,
    vectors: Option<usize>,
    queries: usize,
    dimensions: Option<usize>,
    work: PathBuf,
    hnswlib_script: Option<PathBuf>,
    model: bool,
    sections: store_bench::Sections,
}

fn parse(arguments: Vec<String>) -> Result<Config, String> {
    let mut config = Config {
        dataset: "clustered-384".into(),
        vectors: None,
        queries: 1_000,
        dimensions: None,
        work: std::env::temp_dir().join("vector_bench"),
        hnswlib_script: None,
        model: false,
        sections: store_bench::Sections {
            cold: true,
            quantized: true,
            hot_rounds: 0,
            sketch: true,
            full_precision: true,
        },
    };
    let mut arguments = arguments.into_iter();
    while let Some(flag) = arguments.next() {
        let value = arguments.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|error| format!("{flag}: {error}"))
        };
        match flag.as_str() {
            "--dataset" => config.dataset = value.clone(),
            "--vectors" => config.vectors = Some(number()?),
            "--queries" => config.queries = number()?,
            "--dimensions" => config.dimensions = Some(number()?),
            "--work" => config.work = PathBuf::from(&value),
            "--hnswlib-script" => config.hnswlib_script = Some(PathBuf::from(&value)),
            "--model" => config.model = value == "true",
            "--cold" => config.sections.cold = value == "true",
            "--quantized" => config.sections.quantized = value == "true",
            "--hot-rounds" => config.sections.hot_rounds = number()?,
            "--sketch" => config.sections.sketch = value == "true",
            "--full-precision" => config.sections.full_precision = value == "true",
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(config)
}

fn kernel_timings(dimensions: usize) {
    let left: Vec<f32> = (0..dimensions).map(|index| (index as f32).sin()).collect();
    let right: Vec<f32> = (0..dimensions).map(|index| (index as f32).cos()).collect();
    const CALLS: usize = 2_000_000;
    let time = |kernel: &dyn Fn(&[f32], &[f32]) -> f32| {
        let start = Instant::now();
        let mut sum = 0.0_f32;
        for _ in 0..CALLS {
            sum += kernel(std::hint::black_box(&left), std::hint::black_box(&right));
        }
        std::hint::black_box(sum);
        start.elapsed().as_nanos() as f64 / CALLS as f64
    };
    println!(
        "\n## Distance kernels ({dimensions} dimensions, ns per call)\n\n| kernel | dot | squared Euclidean |\n|---|---|---|"
    );
    println!(
        "| dispatched (AVX2+FMA: {}) | {:.1} | {:.1} |",
        kernels::has_avx2_fma(),
        time(&kernels::dot),
        time(&kernels::squared_euclidean)
    );
    if kernels::has_avx2_fma() {
        let avx2_dot = |a: &[f32], b: &[f32]| kernels::avx2_dot(a, b).unwrap_or(0.0);
        let avx2_l2 = |a: &[f32], b: &[f32]| kernels::avx2_squared_euclidean(a, b).unwrap_or(0.0);
        println!(
            "| AVX2 + FMA | {:.1} | {:.1} |",
            time(&avx2_dot),
            time(&avx2_l2)
        );
    }
    println!(
        "| portable chunked (auto-vectorised, baseline target) | {:.1} | {:.1} |",
        time(&kernels::portable_dot),
        time(&kernels::portable_squared_euclidean)
    );
    println!(
        "| scalar reference (f64 accumulation) | {:.1} | {:.1} |",
        time(&scalar::dot),
        time(&scalar::squared_euclidean)
    );
}

/// The data set `config` names: a synthetic one or `files:DIR`.
fn dataset(config: &Config) -> Result<Dataset, String> {
    if let Some(directory) = config.dataset.strip_prefix(files::PREFIX) {
        return files::load(&files::Request {
            directory: std::path::Path::new(directory),
            vectors: config.vectors,
            queries: config.queries,
            dimensions: config.dimensions,
        });
    }
    Ok(match config.dataset.as_str() {
        "clustered-384" => Dataset::clustered(
            "clustered-384",
            config.vectors.unwrap_or(100_000),
            config.queries,
            384,
            256,
            0.6,
        ),
        "clustered-128" => Dataset::clustered(
            "clustered-128",
            config.vectors.unwrap_or(1_000_000),
            config.queries,
            128,
            1_024,
            0.5,
        ),
        other => return Err(format!("unknown data set {other}")),
    })
}

/// Runs the benchmark described by `arguments`.
pub fn run(arguments: Vec<String>) -> Result<(), String> {
    let config = parse(arguments)?;
    let dataset = dataset(&config)?;
    std::fs::create_dir_all(&config.work).map_err(|error| error.to_string())?;
    println!(
        "# vector_bench: {} — {} vectors x {} dimensions, {} held-out queries, cosine, k=10\n",
        dataset.name,
        dataset.count(),
        dataset.dimensions,
        dataset.query_count()
    );
    kernel_timings(dataset.dimensions);
    let start = Instant::now();
    let truth = ground_truth(&dataset, &|_| true);
    println!(
        "\nground truth (brute force, SIMD): {:.1} s",
        measure::seconds(start)
    );
    measure::print_memory("data set and ground truth generated");
    if let Some(script) = &config.hnswlib_script {
        let directory = config.work.join(format!("data-{}", dataset.name));
        std::fs::create_dir_all(&directory).map_err(|error| error.to_string())?;
        dataset::export(&dataset, &truth, &directory).map_err(|error| error.to_string())?;
        let efs: Vec<String> = EF_SWEEP.iter().map(ToString::to_string).collect();
        let output = std::process::Command::new("python3")
            .arg(script)
            .arg(&directory)
            .arg(dataset.dimensions.to_string())
            .arg(efs.join(","))
            .output()
            .map_err(|error| format!("running {}: {error}", script.display()))?;
        println!(
            "\n## hnswlib (same data, M=16 (M0=32), ef_construction=125, cosine, one thread)\n"
        );
        print!("{}", String::from_utf8_lossy(&output.stdout));
        if !output.status.success() {
            return Err(format!(
                "hnswlib script failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    if config.model {
        model(&dataset, &truth)?;
    }
    store_bench::run_store(&dataset, &truth, &config.work, &EF_SWEEP, config.sections)
}

/// The same algorithm over the in-memory model (`MemoryIndex`): what the page store costs.
fn model(dataset: &Dataset, truth: &[Vec<u32>]) -> Result<(), String> {
    use storage_engine::vector::{GraphParameters, MemoryIndex, Metric, SearchRequest};
    let mut parameters = GraphParameters::new(Metric::Cosine, dataset.dimensions);
    parameters.merge_threshold_vectors = 4_096;
    let mut index = MemoryIndex::new(parameters).map_err(|error| error.to_string())?;
    let start = Instant::now();
    for row in 0..dataset.count() {
        index
            .insert(row as u32, dataset.vector(row))
            .map_err(|error| error.to_string())?;
    }
    index.merge().map_err(|error| error.to_string())?;
    println!(
        "\n## In-memory model (same algorithm, `MemoryIndex`)\n\nbuild: {:.1} s\n\n| ef | recall@10 | QPS |\n|---|---|---|",
        measure::seconds(start)
    );
    for &ef in &EF_SWEEP {
        let start = Instant::now();
        let mut found = Vec::new();
        for row in 0..truth.len() {
            let request = SearchRequest {
                ef: Some(ef),
                ..SearchRequest::new(dataset.query(row), dataset::K)
            };
            let hits = index.search(&request).map_err(|error| error.to_string())?;
            found.push(hits.iter().map(|hit| hit.internal_id).collect::<Vec<u32>>());
        }
        let qps = truth.len() as f64 / measure::seconds(start);
        println!(
            "| {ef} | {:.4} | {qps:.0} |",
            dataset::mean_recall(&found, truth)
        );
    }
    Ok(())
}
