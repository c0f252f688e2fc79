// The config comparison of a resumed run; see ResumeCheck.h.
#include "training/train/ResumeCheck.h"

#include "training/config/Config.h"

#include <map>
#include <sstream>

std::vector<std::string> ferry::changedKeys(const std::string &before,
                                            const std::string &now) {
  auto lines = [](const std::string &text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        out[line.substr(0, colon)] = line;
    }
    return out;
  };
  auto a = lines(before), b = lines(now);
  std::vector<std::string> changed;
  for (const auto &[key, line] : b) {
    // Keys declared free to change on resume (Config.h, KeyStage).
    // How the replicas share the step changes its rounding, not its math:
    // a checkpoint resumes at any replica count, sharded or not.
    bool anyTime = keyStage(key) == KeyStage::RunAnyTime ||
                   key == "execution.data_parallel" ||
                   key == "execution.replicated_tensor_sharding" ||
                   key == "execution.rts_min_elements";
    auto it = a.find(key);
    if (!anyTime && (it == a.end() || it->second != line))
      changed.push_back(it == a.end() ? line + " (new)"
                                      : it->second + " -> " + line);
  }
  return changed;
}
