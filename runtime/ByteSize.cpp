// Byte sizes as people write them in configs ("8GiB", "1.5 GB") and as
// messages and reports show them ("8.00 GiB").
#include "runtime/ByteSize.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace ferry {

std::optional<uint64_t> parseByteSize(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return std::nullopt;
  const char *start = text.c_str() + begin;
  if (!std::isdigit(static_cast<unsigned char>(*start)) && *start != '.')
    return std::nullopt;
  char *end = nullptr;
  double number = std::strtod(start, &end);
  if (end == start || !std::isfinite(number) || number < 0)
    return std::nullopt;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(" \t"));
  unit.erase(unit.find_last_not_of(" \t") + 1);
  static const std::pair<const char *, double> units[] = {
      {"", 1},
      {"b", 1},
      {"kb", 1e3},
      {"mb", 1e6},
      {"gb", 1e9},
      {"tb", 1e12},
      {"kib", 1024.0},
      {"mib", 1048576.0},
      {"gib", 1073741824.0},
      {"tib", 1099511627776.0}};
  std::string l;
  for (char c : unit)
    l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto &[name, scale] : units) {
    if (l == name) {
      double bytes = std::round(number * scale);
      if (bytes >= 18446744073709551616.0) // 2^64
        return std::nullopt;
      return static_cast<uint64_t>(bytes);
    }
  }
  return std::nullopt;
}

std::string formatByteSize(uint64_t bytes) {
  static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[64];
  if (unit == 0)
    std::snprintf(buffer, sizeof buffer, "%llu B",
                  static_cast<unsigned long long>(bytes));
  else if (bytes % (1ull << (10 * unit)) == 0)
    std::snprintf(buffer, sizeof buffer, "%llu %s", // "1 KiB", not "1.00 KiB"
                  static_cast<unsigned long long>(bytes >> (10 * unit)),
                  names[unit]);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f %s", value, names[unit]);
  return buffer;
}

} // namespace ferry
