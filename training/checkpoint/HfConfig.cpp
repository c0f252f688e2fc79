// config.json for transformers (HfConfig.h).
#include "training/checkpoint/HfConfig.h"

#include <nlohmann/json.hpp>

namespace ferry::ckpt {

std::string huggingFaceConfigJson(const Config &config) {
  const ModelConfig &m = config.model;
  nlohmann::ordered_json j;
  j["architectures"] = {m.squad() ? "BertForQuestionAnswering"
                                  : "BertForPreTraining"};
  j["model_type"] = "bert";
  j["vocab_size"] = m.vocab_size; // the padded rows are not exported
  j["hidden_size"] = m.hidden_size;
  j["num_hidden_layers"] = m.layers;
  j["num_attention_heads"] = m.num_heads;
  j["intermediate_size"] = m.ffn_size;
  j["hidden_act"] = "gelu"; // exact (erf) GELU, as ferry's kernels
  j["hidden_dropout_prob"] = m.hidden_dropout;
  j["attention_probs_dropout_prob"] = m.attention_dropout;
  j["max_position_embeddings"] = m.max_positions;
  j["type_vocab_size"] = m.type_vocab_size;
  j["initializer_range"] = 0.02; // models/bert/BertParameters.h kInitStd
  j["layer_norm_eps"] = m.layer_norm_eps;
  j["pad_token_id"] = 0;
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = "float32"; // checkpoints hold fp32 parameters
  j["ferry_model_task"] = m.task;
  return j.dump(2) + "\n";
}

} // namespace ferry::ckpt
