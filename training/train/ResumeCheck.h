// What a resumed run checks against its checkpoint: the config keys whose
// change would make it differ from the uninterrupted run (every key but
// those declared KeyStage::RunAnyTime in training/config/Config.h).
#pragma once

#include <string>
#include <vector>

namespace ferry {

// `before` and `now` are canonical config texts (Config::canonicalText);
// returns "old line -> new line" (or "line (new)") per changed key.
std::vector<std::string> changedKeys(const std::string &before,
                                     const std::string &now);

} // namespace ferry
