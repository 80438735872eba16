"""hnswlib on the data vector_bench exported: build time and recall@10 / QPS per ef.

Usage: python3 hnswlib_bench.py DIRECTORY DIMENSIONS EF[,EF...]
DIRECTORY holds vectors.f32, queries.f32 (little-endian float32 rows) and truth.u32 (10 ids
per query). Single thread for both the build and the queries (queries in one batch call, so
no Python overhead per query; with one thread hnswlib runs in the calling thread, so the
thread CPU time is the work of the build or the queries alone). Prints a Markdown table.
"""

import resource
import sys
import time

import hnswlib
import numpy as np

K = 10
M = 16
EF_CONSTRUCTION = 125


def main() -> None:
    directory, dimensions, efs = sys.argv[1], int(sys.argv[2]), [int(ef) for ef in sys.argv[3].split(",")]
    vectors = np.fromfile(f"{directory}/vectors.f32", dtype="<f4").reshape(-1, dimensions)
    queries = np.fromfile(f"{directory}/queries.f32", dtype="<f4").reshape(-1, dimensions)
    truth = np.fromfile(f"{directory}/truth.u32", dtype="<u4").reshape(-1, K)
    index = hnswlib.Index(space="cosine", dim=dimensions)
    index.init_index(max_elements=len(vectors), M=M, ef_construction=EF_CONSTRUCTION, random_seed=100)
    index.set_num_threads(1)
    start = time.perf_counter()
    cpu_start = time.thread_time()
    index.add_items(vectors, np.arange(len(vectors)), num_threads=1)
    build = time.perf_counter() - start
    build_cpu = time.thread_time() - cpu_start
    print(
        f"build: {build:.1f} s wall, {build_cpu:.1f} s thread CPU ({len(vectors) / build:.0f} vectors/s wall, "
        f"{len(vectors) / build_cpu:.0f} vectors/s CPU; single thread)\n"
    )
    # ru_maxrss is in KiB on Linux: the peak of this Python process (data, index, numpy).
    print(f"memory after build: peak resident {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB\n")
    print("| ef | recall@10 | QPS (wall) | QPS (thread CPU) |\n|---|---|---|---|")
    index.set_ef(efs[0])
    index.knn_query(queries, k=K, num_threads=1)
    for ef in efs:
        index.set_ef(ef)
        start = time.perf_counter()
        cpu_start = time.thread_time()
        labels, _ = index.knn_query(queries, k=K, num_threads=1)
        elapsed = time.perf_counter() - start
        cpu = time.thread_time() - cpu_start
        hits = sum(len(set(found.tolist()) & set(expected.tolist())) for found, expected in zip(labels, truth))
        print(f"| {ef} | {hits / (K * len(queries)):.4f} | {len(queries) / elapsed:.0f} | {len(queries) / cpu:.0f} |")


if __name__ == "__main__":
    main()
