// A BERT WordPiece vocabulary (Vocab.h).
#include "training/text/Vocab.h"

#include "training/data/DataError.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <fstream>
#include <sstream>

namespace ferry::text {

bool isUtf8(std::string_view text, int64_t &badOffset) {
  const auto *p = reinterpret_cast<const utf8proc_uint8_t *>(text.data());
  utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(text.size()), at = 0;
  while (at < n) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t used = utf8proc_iterate(p + at, n - at, &cp);
    if (used <= 0 || cp < 0) {
      badOffset = at;
      return false;
    }
    at += used;
  }
  return true;
}

Vocab Vocab::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data::DataError(fmt::format(
        "{}: cannot open the vocabulary (a BERT vocab.txt, one token per "
        "line)",
        path));
  std::ostringstream whole;
  whole << in.rdbuf();
  std::string text = whole.str();
  std::vector<std::string> tokens;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') // a file with CRLF lines
      line.pop_back();
    int64_t bad = 0;
    if (!isUtf8(line, bad))
      throw data::DataError(fmt::format(
          "{}:{}: the vocabulary is not UTF-8 (byte {} of the line); save "
          "it as UTF-8",
          path, tokens.size() + 1, bad + 1));
    tokens.push_back(std::move(line));
    start = end + 1;
  }
  return fromTokens(std::move(tokens), path);
}

Vocab Vocab::fromTokens(std::vector<std::string> tokens,
                        const std::string &what) {
  Vocab v;
  v.source_ = what;
  v.tokens_ = std::move(tokens);
  for (size_t i = 0; i < v.tokens_.size(); ++i)
    v.ids_[v.tokens_[i]] = static_cast<int32_t>(i);
  std::string missing;
  auto special = [&](const char *name, int32_t &id, bool required) {
    id = v.find(name);
    if (id < 0 && required)
      missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  special("[CLS]", v.cls_, true);
  special("[SEP]", v.sep_, true);
  special("[MASK]", v.mask_, true);
  special("[UNK]", v.unk_, true);
  special("[PAD]", v.pad_, false);
  if (!missing.empty())
    throw data::DataError(fmt::format(
        "{}: the vocabulary ({} tokens) has no {}; a BERT vocabulary lists "
        "[PAD], [UNK], [CLS], [SEP] and [MASK], one per line (Google's and "
        "Hugging Face's vocab.txt have them at ids 0 and 100-103): add the "
        "missing ones or use such a file",
        what, v.tokens_.size(), missing));
  return v;
}

int32_t Vocab::find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

} // namespace ferry::text
