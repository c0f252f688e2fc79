// Reading SQuAD's JSON files with errors that name the file and the place:
// shared by the evaluation (SquadEval) and the examples (SquadData).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace ferry::squad {

// The parsed file; `what` names it in errors ("SQuAD dataset").
nlohmann::json readJson(const std::string &path, const char *what);

// object[key], which must have `type`; `where` is the JSON path of object
// ("data[0].paragraphs[2]"). Throws data::DataError naming the file, the
// path, the key and SQuAD's layout.
const nlohmann::json &member(const nlohmann::json &object, const char *key,
                             nlohmann::json::value_t type,
                             const std::string &path, const std::string &where);

// Walks a SQuAD file's data[].paragraphs[].qas[]: `paragraph` hears each
// paragraph with its JSON path ("data[0].paragraphs[2]"), then `question`
// each of its questions with theirs ("...qas[1]"). Throws data::DataError
// (member's) where a list is missing.
using JsonVisit =
    std::function<void(const nlohmann::json &, const std::string &)>;
void forEachQuestion(const nlohmann::json &root, const std::string &path,
                     const JsonVisit &paragraph, const JsonVisit &question);

} // namespace ferry::squad
