// Byte sizes as people write them in configs and as messages show them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferry {

// Parses a byte size: a number with an optional unit (B, KB, MB, GB, TB in
// powers of 1000; KiB, MiB, GiB, TiB in powers of 1024), e.g. "8GiB",
// "1.5 GB", "1048576". Returns nullopt when it does not parse.
std::optional<uint64_t> parseByteSize(const std::string &text);

// "8 GiB", "1 KiB" (whole numbers of the unit), "1.50 MiB", "100 B": for
// messages and reports.
std::string formatByteSize(uint64_t bytes);

} // namespace ferry
