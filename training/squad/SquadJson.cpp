// Reading SQuAD's JSON files (SquadJson.h).
#include "training/squad/SquadJson.h"

#include "training/data/DataError.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace ferry::squad {

nlohmann::json readJson(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data::DataError(fmt::format("{}: cannot open the {}", path, what));
  std::ostringstream whole;
  whole << in.rdbuf();
  try {
    return nlohmann::json::parse(whole.str());
  } catch (const nlohmann::json::parse_error &e) {
    throw data::DataError(fmt::format("{}: the {} is not JSON (byte {}): {}",
                                      path, what, e.byte, e.what()));
  }
}

const nlohmann::json &member(const nlohmann::json &object, const char *key,
                             nlohmann::json::value_t type,
                             const std::string &path,
                             const std::string &where) {
  if (!object.is_object() || !object.contains(key) ||
      object.at(key).type() != type)
    throw data::DataError(fmt::format(
        "{}: {} has no {} \"{}\"; a SQuAD v1.1 file is {{\"data\": [{{"
        "\"paragraphs\": [{{\"context\": ..., \"qas\": [{{\"id\": ..., "
        "\"answers\": [{{\"text\": ..., \"answer_start\": ...}}]}}]}}]}}]}}",
        path, where,
        type == nlohmann::json::value_t::array    ? "list"
        : type == nlohmann::json::value_t::string ? "string"
                                                  : "value",
        key));
  return object.at(key);
}

void forEachQuestion(const nlohmann::json &root, const std::string &path,
                     const JsonVisit &paragraph, const JsonVisit &question) {
  using T = nlohmann::json::value_t;
  const nlohmann::json &articles =
      member(root, "data", T::array, path, "the file");
  for (size_t a = 0; a < articles.size(); ++a) {
    std::string at = fmt::format("data[{}]", a);
    const nlohmann::json &paragraphs =
        member(articles[a], "paragraphs", T::array, path, at);
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      std::string pat = fmt::format("{}.paragraphs[{}]", at, p);
      paragraph(paragraphs[p], pat);
      const nlohmann::json &qas =
          member(paragraphs[p], "qas", T::array, path, pat);
      for (size_t q = 0; q < qas.size(); ++q)
        question(qas[q], fmt::format("{}.qas[{}]", pat, q));
    }
  }
}

} // namespace ferry::squad
