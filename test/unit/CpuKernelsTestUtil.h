// Helpers of the CPU kernel tests: seeded random inputs and error norms
// against double-precision references.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ferry::test {

inline std::vector<float> randn(size_t n, uint32_t seed, float mean = 0.0f,
                                float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline std::vector<int32_t> randInts(size_t n, int32_t lo, int32_t hi,
                                     uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = dist(gen);
  return v;
}

// ||got - ref|| / ||ref|| (L2 over all elements).
inline double relL2(const std::vector<float> &got,
                    const std::vector<double> &ref) {
  EXPECT_EQ(got.size(), ref.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

inline double maxAbs(const std::vector<float> &got,
                     const std::vector<double> &ref) {
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]));
  return worst;
}

} // namespace ferry::test
