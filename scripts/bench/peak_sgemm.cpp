// Measures oneDNN's dnnl_sgemm throughput on large square matrices: the machine's practical
// single-precision peak, against which scripts/bench/cpu_vs_pytorch reports dltrain's GFLOP/s.
// Prints one JSON line. Benchmark helper only; not part of the dltrain build.
//   g++ -O2 -std=c++17 -fopenmp peak_sgemm.cpp -o peak_sgemm -ldnnl
//   ./peak_sgemm [n=2048] [threads=2] [repeats=10]
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2048;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 10;
  if (n <= 0 || threads <= 0 || repeats <= 0) {
    std::fprintf(stderr, "peak_sgemm: usage: peak_sgemm [n>0] [threads>0] [repeats>0]\n");
    return 2;
  }
  omp_set_num_threads(threads);

  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);

  auto run = [&] {
    return dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  if (run() != dnnl_success) {  // warm-up (also JIT-compiles the kernels)
    std::fprintf(stderr, "peak_sgemm: dnnl_sgemm failed for n=%ld\n", n);
    return 1;
  }
  run();

  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const auto t1 = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double flop = 2.0 * double(n) * double(n) * double(n);
  const double median = seconds[seconds.size() / 2];
  const double best = seconds.front();
  std::printf(
      "{\"benchmark\": \"dnnl_sgemm\", \"n\": %ld, \"threads\": %d, \"repeats\": %d, "
      "\"median_ms\": %.3f, \"gflops_median\": %.2f, \"gflops_best\": %.2f, \"check\": %.4f}\n",
      n, threads, repeats, 1000.0 * median, flop / median / 1e9, flop / best / 1e9,
      double(c[0] + c[n * n - 1]));
  return 0;
}
