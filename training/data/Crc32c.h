// CRC32C (Castagnoli) and the masked form TFRecord files store after each
// record's length and data. Hand-written (a 256-entry table, one byte per
// step) because no Debian package provides CRC32C as a C++ library for this
// use: the candidates are either bundled inside larger projects or not
// packaged at all, and the table is a few lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::data {

// CRC32C of `size` bytes (reflected polynomial 0x82F63B78, initial value and
// final xor 0xFFFFFFFF). `crc` continues an earlier result: crc32c(b, n,
// crc32c(a, m)) is the CRC of a followed by b. crc32c("123456789") is
// 0xE3069283.
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view bytes, uint32_t crc = 0) {
  return crc32c(bytes.data(), bytes.size(), crc);
}

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo
// 2^32.
constexpr uint32_t maskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// Appends one TFRecord record holding `data` to `out`: the length (uint64),
// its masked CRC32C, the data, the data's masked CRC32C, all little-endian.
// MLPerf's data files and TensorBoard's event files are both made of these.
void appendTfRecord(std::string &out, std::string_view data);

} // namespace ferry::data
