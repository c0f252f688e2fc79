// Table-driven CRC32C; see Crc32c.h.
#include "training/data/Crc32c.h"

#include <array>

namespace ferry::data {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u; // reflected Castagnoli

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1u) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

} // namespace

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = kTable[(crc ^ bytes[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

void appendTfRecord(std::string &out, std::string_view data) {
  auto appendLittle = [](std::string &to, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
      to.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
  };
  std::string length;
  appendLittle(length, data.size(), 8);
  out += length;
  appendLittle(out, maskCrc32c(crc32c(length)), 4);
  out += data;
  appendLittle(out, maskCrc32c(crc32c(data)), 4);
}

} // namespace ferry::data
