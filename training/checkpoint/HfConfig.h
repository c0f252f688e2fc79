// The Hugging Face config.json written beside a checkpoint's
// model.safetensors, so that transformers loads a step directory as it is:
//   BertForPreTraining.from_pretrained("out/step-00000040")
// (BertForQuestionAnswering for model.task squad). docs/huggingface.md lists
// what was checked.
#pragma once

#include "training/config/Config.h"

#include <string>

namespace ferry::ckpt {

// transformers' BertConfig of `config`'s model, as JSON text: the sizes,
// exact GELU ("gelu"), the dropout probabilities, layer_norm_eps, BERT's
// initializer_range 0.02 (ferry's initialisation), float32.
std::string huggingFaceConfigJson(const Config &config);

} // namespace ferry::ckpt
