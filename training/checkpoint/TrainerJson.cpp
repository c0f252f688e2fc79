// trainer.json: written with a checksum, read with every field checked; see
// TrainerJson.h.
#include "training/checkpoint/TrainerJson.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>

using namespace ferry;
using namespace ferry::ckpt;

namespace {

constexpr int kTrainerFormatVersion = 2;

std::string checksumOf(const nlohmann::json &withoutChecksum) {
  std::string text = withoutChecksum.dump();
  return fmt::format("xxh64:{:016x}", XXH64(text.data(), text.size(), 0));
}

// training.seed as the canonical config text records it, if it does.
bool seedOfConfig(const std::string &configText, int64_t &seed) {
  std::istringstream in(configText);
  std::string line;
  const std::string prefix = "training.seed: ";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) {
      try {
        size_t used = 0;
        seed = std::stoll(line.substr(prefix.size()), &used);
        return used == line.size() - prefix.size();
      } catch (const std::exception &) {
        return false;
      }
    }
  return false;
}

} // namespace

std::string ckpt::trainerJsonText(const TrainerState &state) {
  nlohmann::json trainer = {{"format_version", kTrainerFormatVersion},
                            {"step", state.step},
                            {"data_position", state.dataPosition},
                            {"seed", state.seed},
                            {"config", state.configText}};
  if (state.lossScale > 0) {
    trainer["loss_scale"] = state.lossScale;
    trainer["loss_scale_clean_steps"] = state.lossScaleCleanSteps;
    trainer["skipped_updates"] = state.skippedUpdates;
  }
  trainer["checksum"] = checksumOf(trainer);
  return trainer.dump(2) + "\n";
}

TrainerState ckpt::parseTrainerJson(const std::string &text,
                                    const std::string &path) {
  const std::string damaged =
      "; the checkpoint is damaged or was edited: resume from another step "
      "directory";
  nlohmann::json trainer;
  try {
    trainer = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw CheckpointError(
        fmt::format("{}: not valid JSON ({}){}", path, e.what(), damaged));
  }
  if (!trainer.is_object())
    throw CheckpointError(fmt::format(
        "{}: expected a JSON object of fields, found {}{}", path,
        trainer.type_name(), damaged));
  static const std::set<std::string> known = {
      "format_version", "step",  "data_position",          "seed",
      "config",         "checksum", "loss_scale", "loss_scale_clean_steps",
      "skipped_updates"};
  for (const auto &item : trainer.items())
    if (!known.count(item.key()))
      throw CheckpointError(fmt::format(
          "{}: unknown field '{}'; this ferry writes only {}{}", path,
          item.key(), fmt::join(known, ", "), damaged));

  auto integer = [&](const char *key) -> int64_t {
    if (!trainer.contains(key))
      throw CheckpointError(
          fmt::format("{}: field '{}' is missing{}", path, key, damaged));
    const nlohmann::json &v = trainer.at(key);
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw CheckpointError(fmt::format(
          "{}: field '{}' is {}, beyond a 64-bit integer{}", path, key,
          v.dump(), damaged));
    if (!v.is_number_integer())
      throw CheckpointError(fmt::format(
          "{}: field '{}' is {}, not an integer{}", path, key, v.dump(),
          damaged));
    return v.get<int64_t>();
  };

  int64_t version = integer("format_version");
  if (version != kTrainerFormatVersion && version != 1)
    throw CheckpointError(fmt::format(
        "{}: format_version {}; this ferry reads versions 1 and {} (a newer "
        "ferry wrote it? resume with that ferry)",
        path, version, kTrainerFormatVersion));
  if (version >= 2) {
    if (!trainer.contains("checksum") || !trainer.at("checksum").is_string())
      throw CheckpointError(fmt::format(
          "{}: field 'checksum' is missing or not a string{}", path, damaged));
    std::string stored = trainer.at("checksum").get<std::string>();
    nlohmann::json rest = trainer;
    rest.erase("checksum");
    std::string computed = checksumOf(rest);
    if (stored != computed)
      throw CheckpointError(fmt::format(
          "{}: checksum mismatch (stored {}, computed {}){}", path, stored,
          computed, damaged));
  }

  TrainerState state;
  state.step = integer("step");
  state.dataPosition = integer("data_position");
  state.seed = integer("seed");
  if (!trainer.contains("config") || !trainer.at("config").is_string())
    throw CheckpointError(fmt::format(
        "{}: field 'config' is missing or not a string{}", path, damaged));
  state.configText = trainer.at("config").get<std::string>();
  if (state.step < 0 || state.dataPosition < 0)
    throw CheckpointError(fmt::format(
        "{}: step {} and data_position {} must be non-negative{}", path,
        state.step, state.dataPosition, damaged));
  int64_t configSeed = 0;
  if (!seedOfConfig(state.configText, configSeed))
    throw CheckpointError(fmt::format(
        "{}: field 'config' has no 'training.seed: N' line{}", path, damaged));
  if (configSeed != state.seed)
    throw CheckpointError(fmt::format(
        "{}: seed {} differs from the training.seed {} of the config it "
        "records{}",
        path, state.seed, configSeed, damaged));

  bool scaling = trainer.contains("loss_scale") ||
                 trainer.contains("loss_scale_clean_steps") ||
                 trainer.contains("skipped_updates");
  if (scaling) {
    const nlohmann::json &scale = trainer.contains("loss_scale")
                                      ? trainer.at("loss_scale")
                                      : nlohmann::json();
    if (!scale.is_number() || !std::isfinite(scale.get<double>()) ||
        scale.get<double>() <= 0)
      throw CheckpointError(fmt::format(
          "{}: field 'loss_scale' is {}, not a finite positive number{}",
          path, scale.dump(), damaged));
    state.lossScale = scale.get<double>();
    state.lossScaleCleanSteps = integer("loss_scale_clean_steps");
    state.skippedUpdates = integer("skipped_updates");
    if (state.lossScaleCleanSteps < 0 || state.skippedUpdates < 0 ||
        state.skippedUpdates > state.step)
      throw CheckpointError(fmt::format(
          "{}: loss_scale_clean_steps {} and skipped_updates {} must be "
          "non-negative, and skipped_updates at most step {}{}",
          path, state.lossScaleCleanSteps, state.skippedUpdates, state.step,
          damaged));
  }
  return state;
}
