// A BERT WordPiece vocabulary (vocab.txt): one token per line, the line's
// index its id, as Google's and Hugging Face's BERT tokenizers read it. The
// special tokens the data and the model need ([CLS], [SEP], [MASK], [UNK])
// must be there; a file without them, or that is not UTF-8, is a DataError
// naming the file, the line and the fix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ferry::text {

class Vocab {
public:
  // Reads `path`. Throws data::DataError.
  static Vocab load(const std::string &path);
  // The tokens in id order; `what` names them in errors (a file, a test).
  static Vocab fromTokens(std::vector<std::string> tokens,
                          const std::string &what);

  // The id of `token`, or -1. A token listed twice has its last line's id,
  // as both reference tokenizers give.
  int32_t find(std::string_view token) const;
  const std::string &token(int32_t id) const { return tokens_.at(id); }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string &source() const { return source_; }

  int32_t cls() const { return cls_; }
  int32_t sep() const { return sep_; }
  int32_t mask() const { return mask_; }
  int32_t unk() const { return unk_; }
  int32_t pad() const { return pad_; } // -1 when absent (0 is used then)

private:
  std::string source_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  int32_t cls_ = -1, sep_ = -1, mask_ = -1, unk_ = -1, pad_ = -1;
};

// Whether `text` is well-formed UTF-8; if not, `badOffset` is the byte
// where it stops being so.
bool isUtf8(std::string_view text, int64_t &badOffset);

} // namespace ferry::text
