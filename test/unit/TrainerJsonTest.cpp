// trainer.json: what ferry writes reads back, and every edit, type slip and
// out-of-range field is refused with the file, the field and the fix.
#include "training/checkpoint/TrainerJson.h"

#include <gtest/gtest.h>

#include <string>

using ferry::ckpt::CheckpointError;
using ferry::ckpt::parseTrainerJson;
using ferry::ckpt::TrainerState;
using ferry::ckpt::trainerJsonText;

namespace {

TrainerState sampleState() {
  TrainerState s;
  s.step = 40;
  s.dataPosition = 640;
  s.seed = 42;
  s.configText = "model.layers: 2\ntraining.seed: 42\n";
  return s;
}

std::string errorOf(const std::string &text) {
  try {
    parseTrainerJson(text, "ckpt/trainer.json");
  } catch (const CheckpointError &e) {
    return e.what();
  }
  return "";
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string edited(std::string text, const std::string &from,
                   const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

} // namespace

TEST(TrainerJson, RoundTrips) {
  TrainerState s = sampleState();
  s.lossScale = 32768;
  s.lossScaleCleanSteps = 7;
  s.skippedUpdates = 2;
  TrainerState r = parseTrainerJson(trainerJsonText(s), "t.json");
  EXPECT_EQ(r.step, 40);
  EXPECT_EQ(r.dataPosition, 640);
  EXPECT_EQ(r.seed, 42);
  EXPECT_EQ(r.configText, s.configText);
  EXPECT_EQ(r.lossScale, 32768);
  EXPECT_EQ(r.lossScaleCleanSteps, 7);
  EXPECT_EQ(r.skippedUpdates, 2);
}

TEST(TrainerJson, AnyEditFailsTheChecksum) {
  std::string text = trainerJsonText(sampleState());
  for (auto [from, to] : {std::pair<std::string, std::string>{"\"seed\": 42",
                                                              "\"seed\": -1"},
                          {"\"step\": 40", "\"step\": 41"},
                          {"model.layers: 2", "model.layers: 3"}}) {
    std::string message = errorOf(edited(text, from, to));
    EXPECT_NE(message.find("ckpt/trainer.json: checksum mismatch"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("resume from another step directory"),
              std::string::npos);
  }
}

// A version 1 file (no checksum), so each field check is reached.
const char *const kVersionOne = R"({"format_version": 1, "step": 3,
  "data_position": 48, "seed": 42, "config": "training.seed: 42\n"})";

TEST(TrainerJson, FieldsAreTypedAndRanged) {
  std::string text = kVersionOne;
  // 2^70 is no int64 (and no longer an integer once parsed).
  EXPECT_NE(errorOf(edited(text, "\"seed\": 42",
                           "\"seed\": 1180591620717411303424"))
                .find("field 'seed' is 1.1805916207174113e+21, not an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(text, "\"seed\": 42", "\"seed\": 18446744073709551615"))
                .find("beyond a 64-bit integer"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(text, "\"step\": 3", "\"step\": \"3\""))
                .find("field 'step' is \"3\", not an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(text, "\"step\": 3", "\"stepp\": 3"))
                .find("unknown field 'stepp'"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(text, "\"format_version\": 1",
                           "\"format_version\": 9"))
                .find("format_version 9; this ferry reads versions 1 and 2"),
            std::string::npos);
  EXPECT_NE(errorOf("[1, 2]").find("expected a JSON object of fields, found "
                                   "array"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"step\": ").find("not valid JSON"), std::string::npos);
}

// Version 1 (no checksum) still reads, with the same field checks: a seed
// that disagrees with the recorded config, or a negative step, is refused.
TEST(TrainerJson, VersionOneIsCheckedFieldByField) {
  const char *ok = kVersionOne;
  EXPECT_EQ(errorOf(ok), "");
  EXPECT_NE(errorOf(edited(ok, "\"seed\": 42", "\"seed\": 7"))
                .find("seed 7 differs from the training.seed 42 of the config "
                      "it records"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(ok, "\"step\": 3", "\"step\": -3"))
                .find("must be non-negative"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(ok, "\"step\": 3", "\"step\": 3, \"loss_scale\": "
                                              "0, \"loss_scale_clean_steps\": "
                                              "0, \"skipped_updates\": 0"))
                .find("field 'loss_scale' is 0, not a finite positive number"),
            std::string::npos);
  EXPECT_NE(errorOf(edited(ok, "\"step\": 3", "\"step\": 3, \"loss_scale\": "
                                              "2, \"loss_scale_clean_steps\": "
                                              "0, \"skipped_updates\": 4"))
                .find("skipped_updates at most step 3"),
            std::string::npos);
}
