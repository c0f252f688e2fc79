//===- BertParameters.h - BERT's parameters and their HF names --*- C++ -*-===//
//
// The one table of BERT's trainable tensors: ferry's symbol name, the Hugging
// Face `BertForPreTraining` name, the shape, the initialisation and whether
// weight decay applies. The builder declares parameters from it; checkpoint
// import/export maps names through it.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_MODELS_BERT_BERTPARAMETERS_H
#define FERRY_MODELS_BERT_BERTPARAMETERS_H

#include "training/config/Config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::bert {

enum class Block { Embeddings, Layer, Heads };
enum class Init { Normal, Zeros, Ones };

struct ParameterSpec {
  Block block;
  std::string name;   // ferry's symbol, e.g. "layer.attention.query.weight"
  std::string hfName; // "bert.encoder.layer.{}.attention.self.query.weight"
  std::vector<int64_t> shape; // one layer's shape for stacked (Layer) entries
  Init init;
  bool noWeightDecay; // biases and LayerNorm parameters

  bool stacked() const { return block == Block::Layer; }
};

// Standard deviation of the normal initialisation (BERT's initializer_range).
constexpr double kInitStd = 0.02;

// Every parameter in block order (embeddings, layer, heads); within a block,
// the order in which the block function takes them. The heads are the
// pretraining heads (pooler, MLM, NSP) or, for model.task squad,
// BertForQuestionAnswering's span head (qa_outputs).
std::vector<ParameterSpec> bertParameters(const ModelConfig &model);

} // namespace ferry::bert

#endif // FERRY_MODELS_BERT_BERTPARAMETERS_H
