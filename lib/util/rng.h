// Deterministic random numbers. Every random choice in dltrain derives from a seed and a
// stream id (e.g. seed, epoch, rank, index) so runs reproduce bit for bit.
// splitmix64 to derive streams, xoshiro256** to generate.
#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace dlt {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  // A stream derived from a seed and any number of ids: Rng::derive(seed, {epoch, index}).
  static Rng derive(uint64_t seed, std::initializer_list<uint64_t> ids) {
    uint64_t x = seed;
    for (uint64_t id : ids) {
      uint64_t t = x ^ (id * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
      x = splitmix64(t);
    }
    return Rng(x);
  }
  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& v : s_) v = splitmix64(x);
  }
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() { return (next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
  double normal() {  // Box-Muller, one value per call
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace dlt
