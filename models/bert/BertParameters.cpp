//===- BertParameters.cpp - BERT's parameters and their HF names ----------===//

#include "models/bert/BertParameters.h"

namespace ferry::bert {

std::vector<ParameterSpec> bertParameters(const ModelConfig &m) {
  const int64_t h = m.hidden_size, f = m.ffn_size, v = m.paddedVocabSize();
  const std::string layer = "bert.encoder.layer.{}.";
  auto weight = [](Block b, std::string name, std::string hf,
                   std::vector<int64_t> shape) {
    return ParameterSpec{
        b,    std::move(name), std::move(hf), std::move(shape), Init::Normal,
        false};
  };
  auto bias = [](Block b, std::string name, std::string hf, int64_t size) {
    return ParameterSpec{b,      std::move(name), std::move(hf),
                         {size}, Init::Zeros,     true};
  };
  auto lnScale = [](Block b, std::string name, std::string hf, int64_t size) {
    return ParameterSpec{b,      std::move(name), std::move(hf),
                         {size}, Init::Ones,      true};
  };
  const Block E = Block::Embeddings, L = Block::Layer, H = Block::Heads;
  // One row per entry reads better than wrapped calls.
  // clang-format off
  std::vector<ParameterSpec> specs = {
      weight(E, "embeddings.word", "bert.embeddings.word_embeddings.weight", {v, h}),
      weight(E, "embeddings.position", "bert.embeddings.position_embeddings.weight", {m.max_positions, h}),
      weight(E, "embeddings.token_type", "bert.embeddings.token_type_embeddings.weight", {m.type_vocab_size, h}),
      lnScale(E, "embeddings.layer_norm.scale", "bert.embeddings.LayerNorm.weight", h),
      bias(E, "embeddings.layer_norm.bias", "bert.embeddings.LayerNorm.bias", h),

      weight(L, "layer.attention.query.weight", layer + "attention.self.query.weight", {h, h}),
      bias(L, "layer.attention.query.bias", layer + "attention.self.query.bias", h),
      weight(L, "layer.attention.key.weight", layer + "attention.self.key.weight", {h, h}),
      bias(L, "layer.attention.key.bias", layer + "attention.self.key.bias", h),
      weight(L, "layer.attention.value.weight", layer + "attention.self.value.weight", {h, h}),
      bias(L, "layer.attention.value.bias", layer + "attention.self.value.bias", h),
      weight(L, "layer.attention.output.weight", layer + "attention.output.dense.weight", {h, h}),
      bias(L, "layer.attention.output.bias", layer + "attention.output.dense.bias", h),
      lnScale(L, "layer.attention.layer_norm.scale", layer + "attention.output.LayerNorm.weight", h),
      bias(L, "layer.attention.layer_norm.bias", layer + "attention.output.LayerNorm.bias", h),
      weight(L, "layer.ffn.intermediate.weight", layer + "intermediate.dense.weight", {f, h}),
      bias(L, "layer.ffn.intermediate.bias", layer + "intermediate.dense.bias", f),
      weight(L, "layer.ffn.output.weight", layer + "output.dense.weight", {h, f}),
      bias(L, "layer.ffn.output.bias", layer + "output.dense.bias", h),
      lnScale(L, "layer.ffn.layer_norm.scale", layer + "output.LayerNorm.weight", h),
      bias(L, "layer.ffn.layer_norm.bias", layer + "output.LayerNorm.bias", h),
  };
  if (m.squad()) {
    // BertForQuestionAnswering's span head: start and end logits per token.
    specs.push_back(weight(H, "qa.weight", "qa_outputs.weight", {2, h}));
    specs.push_back(bias(H, "qa.bias", "qa_outputs.bias", 2));
    return specs;
  }
  std::vector<ParameterSpec> heads = {

      weight(H, "pooler.weight", "bert.pooler.dense.weight", {h, h}),
      bias(H, "pooler.bias", "bert.pooler.dense.bias", h),
      weight(H, "mlm.transform.weight", "cls.predictions.transform.dense.weight", {h, h}),
      bias(H, "mlm.transform.bias", "cls.predictions.transform.dense.bias", h),
      lnScale(H, "mlm.transform.layer_norm.scale", "cls.predictions.transform.LayerNorm.weight", h),
      bias(H, "mlm.transform.layer_norm.bias", "cls.predictions.transform.LayerNorm.bias", h),
      // The decoder's weight is embeddings.word (tied); only its bias is its own.
      bias(H, "mlm.decoder.bias", "cls.predictions.bias", v),
      weight(H, "nsp.weight", "cls.seq_relationship.weight", {2, h}),
      bias(H, "nsp.bias", "cls.seq_relationship.bias", 2),
  };
  // clang-format on
  specs.insert(specs.end(), heads.begin(), heads.end());
  return specs;
}

} // namespace ferry::bert
