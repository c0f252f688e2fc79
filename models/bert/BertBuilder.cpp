//===- BertBuilder.cpp - config -> graph IR for BERT pretraining ----------===//
//
// The numerics follow ARCHITECTURE.md: post-LN encoder, exact-erf GELU,
// learned position and token-type embeddings, additive attention mask, MLM
// head (dense, GELU, LayerNorm, decoder tied to the word embeddings plus its
// own bias) at the masked positions only, NSP head on a tanh pooler of token
// 0. MLM loss = sum of counted slots' cross-entropies / the global batch's
// count of counted slots (an input); NSP loss = sum / global batch size.
//
// Packed rows (model.max_sequences_per_pack K > 1) hold up to K sequences:
// the inputs gain sequence_ids and position_ids [B, S] and cls_positions
// [B, K]; the NSP labels and weights are [B, K]. Attention stays within a
// sequence (the softmax's `sequences`), positions restart per sequence, the
// pooler reads each sequence's [CLS], and NSP loss = sum / nsp_count (the
// global batch's real sequences, an input), so a packed batch computes what
// the unpacked batch of the same samples computes.
//
//===----------------------------------------------------------------------===//

#include "models/bert/BertBuilder.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"
#include "models/bert/BertParameters.h"
#include "training/config/Config.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;

namespace {

class BertBuilder {
public:
  BertBuilder(MLIRContext &context, const Config &config)
      : b(&context), loc(b.getUnknownLoc()), cfg(config), m(config.model),
        specs(bert::bertParameters(config.model)) {
    f32 = b.getF32Type();
    batch = config.execution.micro_batch_size;
    packed = config.model.packed();
    packs = config.model.max_sequences_per_pack;
  }

  OwningOpRef<ModuleOp> build(StringRef name);

private:
  // ---- types ---------------------------------------------------------------
  RankedTensorType floats(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  }
  RankedTensorType ints(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI32Type());
  }
  RankedTensorType scalar() { return floats({}); }
  // Packed rows' dropout keys: per token (sample key, position), [B, S, 2].
  RankedTensorType keysType() { return ints({batch, m.seq_length, 2}); }
  RankedTensorType hiddenType() {
    return floats({batch, m.seq_length, m.hidden_size});
  }
  RankedTensorType paramType(const bert::ParameterSpec &spec, bool withLayers) {
    SmallVector<int64_t> shape;
    if (withLayers)
      shape.push_back(m.layers);
    shape.append(spec.shape.begin(), spec.shape.end());
    return floats(shape);
  }
  std::vector<const bert::ParameterSpec *> blockParams(bert::Block block) {
    std::vector<const bert::ParameterSpec *> out;
    for (const bert::ParameterSpec &spec : specs)
      if (spec.block == block)
        out.push_back(&spec);
    return out;
  }

  // ---- small op helpers -----------------------------------------------------
  // A linear layer with HF [out, in] weights: x W^T + b.
  Value linear(Value x, Value weight, Value bias) {
    auto xt = cast<RankedTensorType>(x.getType());
    auto wt = cast<RankedTensorType>(weight.getType());
    SmallVector<int64_t> shape(xt.getShape().drop_back());
    shape.push_back(wt.getDimSize(0));
    auto mm = MatmulOp::create(b, loc, floats(shape), x, weight,
                               /*transpose_lhs=*/false, /*transpose_rhs=*/true);
    return BiasAddOp::create(b, loc, mm, bias);
  }
  Value layerNorm(Value x, Value scale, Value bias) {
    return LayerNormOp::create(b, loc, x, scale, bias,
                               b.getF64FloatAttr(m.layer_norm_eps));
  }
  // Packed rows: keyed by the function's dropout_keys (`keys`).
  Value dropout(Value x, Value seed, Value layer, Value offset, double p,
                StringRef purpose) {
    return DropoutOp::create(b, loc, x, seed, layer, offset, keys,
                             b.getF64FloatAttr(p), b.getStringAttr(purpose),
                             /*tensor_key_stride=*/IntegerAttr());
  }
  Value indexConstant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  // [B, S, H] -> [B, N, S, D]
  Value splitHeads(Value x) {
    int64_t n = m.num_heads, d = m.headSize();
    Value r = ReshapeOp::create(b, loc, floats({batch, m.seq_length, n, d}), x);
    return TransposeOp::create(b, loc, floats({batch, n, m.seq_length, d}), r,
                               b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  }
  // [B, N, S, D] -> [B, S, H]
  Value mergeHeads(Value x) {
    int64_t n = m.num_heads, d = m.headSize();
    Value t = TransposeOp::create(b, loc, floats({batch, m.seq_length, n, d}),
                                  x, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    return ReshapeOp::create(b, loc, hiddenType(), t);
  }

  func::FuncOp beginFunction(ModuleOp module, StringRef name,
                             ArrayRef<Type> inputs, ArrayRef<Type> results) {
    b.setInsertionPointToEnd(module.getBody());
    auto fn =
        func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
    b.setInsertionPointToStart(fn.addEntryBlock());
    return fn;
  }

  void declareParameters(ModuleOp module);
  func::FuncOp buildEmbeddings(ModuleOp module);
  func::FuncOp buildEncoderLayer(ModuleOp module);
  func::FuncOp buildHeads(ModuleOp module);
  func::FuncOp buildSpanHead(ModuleOp module);
  void buildForward(ModuleOp module, func::FuncOp embeddings,
                    func::FuncOp layer, func::FuncOp heads);
  // The encoder stack over the embeddings' output: an scf.for over the
  // layers (shared by both tasks' @forward).
  Value encoderStack(func::FuncOp layer, Value hidden, Value mask,
                     Value sequenceIds, Value keys, Value seed, Value offset);

  OpBuilder b;
  Location loc;
  const Config &cfg;
  const ModelConfig &m;
  std::vector<bert::ParameterSpec> specs;
  Type f32;
  int64_t batch = 0;
  bool packed = false; // rows of up to `packs` sequences
  int64_t packs = 1;
  Value keys; // packed: the dropout keys of the function being built
};

void BertBuilder::declareParameters(ModuleOp module) {
  b.setInsertionPointToEnd(module.getBody());
  for (const bert::ParameterSpec &spec : specs) {
    InitKind init = spec.init == bert::Init::Normal  ? InitKind::normal
                    : spec.init == bert::Init::Zeros ? InitKind::zeros
                                                     : InitKind::ones;
    FloatAttr std = spec.init == bert::Init::Normal
                        ? b.getF64FloatAttr(bert::kInitStd)
                        : FloatAttr();
    auto param = ParameterOp::create(
        b, loc, spec.name, paramType(spec, spec.stacked()), init, std,
        spec.hfName, spec.stacked(), spec.noWeightDecay);
    // The padded vocabulary rows (of the word embedding and of the decoder
    // bias) start (and, with no gradient, stay) zero, so norms and LAMB's
    // trust ratio equal the unpadded model's; checkpoints hold only the
    // first vocab_size rows.
    bool vocabRows =
        spec.name == "embeddings.word" || spec.name == "mlm.decoder.bias";
    if (vocabRows && m.paddedVocabSize() != m.vocab_size)
      param->setAttr(ferry::graph::attrs::kInitRows,
                     b.getI64IntegerAttr(m.vocab_size));
  }
}

// @embeddings(ids, segments, [position_ids, dropout_keys,] seed,
//             sample_offset, word, position, token_type, ln_scale, ln_bias)
//   -> [B, S, H]
// (position_ids and dropout_keys when packed; else the positions are
// 0 .. S-1 and dropout is keyed by the sample offset).
func::FuncOp BertBuilder::buildEmbeddings(ModuleOp module) {
  SmallVector<Type> inputs = {ints({batch, m.seq_length}),
                              ints({batch, m.seq_length})};
  if (packed)
    inputs.append({ints({batch, m.seq_length}), keysType()});
  inputs.append({b.getI64Type(), b.getIndexType()});
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Embeddings))
    inputs.push_back(paramType(*spec, false));
  func::FuncOp fn =
      beginFunction(module, bert::kEmbeddingsFn, inputs, {hiddenType()});
  auto all = fn.getArguments();
  Value ids = all[0], segments = all[1];
  Value positions = packed ? all[2] : Value();
  keys = packed ? all[3] : Value();
  auto args = all.drop_front(packed ? 2 : 0);
  Value seed = args[2], offset = args[3];
  Value word = args[4], position = args[5], tokenType = args[6];
  Value lnScale = args[7], lnBias = args[8];

  // One statement per op: C++ leaves the order of argument evaluation open,
  // and the IR (hence the cache key) must not depend on the host compiler.
  if (!packed)
    positions = IotaOp::create(b, loc, ints({batch, m.seq_length}), 1);
  Value wordRows = EmbeddingOp::create(b, loc, hiddenType(), word, ids,
                                       /*tensor_row_stride=*/IntegerAttr());
  Value positionRows =
      EmbeddingOp::create(b, loc, hiddenType(), position, positions,
                          /*tensor_row_stride=*/IntegerAttr());
  Value typeRows =
      EmbeddingOp::create(b, loc, hiddenType(), tokenType, segments,
                          /*tensor_row_stride=*/IntegerAttr());
  Value sum = AddOp::create(
      b, loc, AddOp::create(b, loc, wordRows, positionRows), typeRows);
  Value normed = layerNorm(sum, lnScale, lnBias);
  Value out = dropout(normed, seed, indexConstant(0), offset, m.hidden_dropout,
                      "embeddings.output");
  func::ReturnOp::create(b, loc, out);
  keys = Value();
  return fn;
}

// @encoder_layer(x, mask, [sequence_ids, dropout_keys,] seed, layer,
//                sample_offset, 16 layer weights) -> [B, S, H]; post-LN:
// LN(x + drop(attn(x))), then LN(h + drop(ffn(h))). sequence_ids and
// dropout_keys when packed.
func::FuncOp BertBuilder::buildEncoderLayer(ModuleOp module) {
  SmallVector<Type> inputs = {hiddenType(), floats({batch, m.seq_length})};
  if (packed)
    inputs.append({ints({batch, m.seq_length}), keysType()});
  inputs.append({b.getI64Type(), b.getIndexType(), b.getIndexType()});
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Layer))
    inputs.push_back(paramType(*spec, false));
  func::FuncOp fn =
      beginFunction(module, bert::kEncoderLayerFn, inputs, {hiddenType()});
  auto all = fn.getArguments();
  Value x = all[0], mask = all[1];
  Value sequenceIds = packed ? all[2] : Value();
  keys = packed ? all[3] : Value();
  auto a = all.drop_front(packed ? 2 : 0);
  Value seed = a[2], layer = a[3], offset = a[4];
  auto w = a.drop_front(5); // in BertParameters order
  Value wq = w[0], bq = w[1], wk = w[2], bk = w[3], wv = w[4], bv = w[5];
  Value wo = w[6], bo = w[7], ln1s = w[8], ln1b = w[9];
  Value wi = w[10], bi = w[11], wo2 = w[12], bo2 = w[13];
  Value ln2s = w[14], ln2b = w[15];

  // Self-attention.
  Value q = splitHeads(linear(x, wq, bq));
  Value k = splitHeads(linear(x, wk, bk));
  Value v = splitHeads(linear(x, wv, bv));
  int64_t n = m.num_heads, s = m.seq_length;
  Value scores = MatmulOp::create(b, loc, floats({batch, n, s, s}), q, k,
                                  /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true);
  scores = ScaleOp::create(
      b, loc, scores,
      b.getF64FloatAttr(1.0 / std::sqrt(static_cast<double>(m.headSize()))));
  Value probs = SoftmaxOp::create(b, loc, scores, mask, sequenceIds);
  probs = dropout(probs, seed, layer, offset, m.attention_dropout,
                  "attention.probs");
  Value context =
      MatmulOp::create(b, loc, floats({batch, n, s, m.headSize()}), probs, v,
                       /*transpose_lhs=*/false, /*transpose_rhs=*/false);
  Value attention = linear(mergeHeads(context), wo, bo);
  attention = dropout(attention, seed, layer, offset, m.hidden_dropout,
                      "attention.output");
  Value h = layerNorm(AddOp::create(b, loc, attention, x), ln1s, ln1b);

  // Feed-forward.
  Value inter = GeluOp::create(b, loc, linear(h, wi, bi));
  Value ffn = linear(inter, wo2, bo2);
  ffn = dropout(ffn, seed, layer, offset, m.hidden_dropout, "ffn.output");
  Value out = layerNorm(AddOp::create(b, loc, ffn, h), ln2s, ln2b);
  func::ReturnOp::create(b, loc, out);
  keys = Value();
  return fn;
}

// @heads(x, masked_lm_positions, masked_lm_ids, masked_lm_weights,
//        next_sentence_labels, next_sentence_weights, mlm_count, word (tied),
//        [cls_positions, nsp_count,] head weights)
//   -> (loss, mlm_loss, nsp_loss, mlm_correct, nsp_correct)
// Packed: the NSP labels and weights are [B, K], cls_positions [B, K] gives
// each sequence's [CLS], and nsp_count normalises the NSP loss.
func::FuncOp BertBuilder::buildHeads(ModuleOp module) {
  int64_t p = m.max_predictions, h = m.hidden_size;
  const bert::ParameterSpec &wordSpec = specs.front();
  SmallVector<int64_t> nspShape = {batch};
  if (packed)
    nspShape.push_back(packs);
  SmallVector<Type> inputs = {hiddenType(),     ints({batch, p}),
                              ints({batch, p}), floats({batch, p}),
                              ints(nspShape),   floats(nspShape),
                              scalar(),         paramType(wordSpec, false)};
  if (packed)
    inputs.append({ints({batch, packs}), scalar()});
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Heads))
    inputs.push_back(paramType(*spec, false));
  func::FuncOp fn =
      beginFunction(module, bert::kHeadsFn, inputs,
                    {scalar(), scalar(), scalar(), scalar(), scalar()});
  auto a = fn.getArguments();
  Value x = a[0], positions = a[1], labels = a[2], weights = a[3];
  Value nspLabels = a[4], nspWeights = a[5], mlmCount = a[6], word = a[7];
  Value clsPositions = packed ? a[8] : Value();
  Value nspCount = packed ? a[9] : Value();
  auto w = a.drop_front(packed ? 10 : 8); // in BertParameters order
  Value poolW = w[0], poolB = w[1], trW = w[2], trB = w[3];
  Value trLnS = w[4], trLnB = w[5], decoderBias = w[6], nspW = w[7],
        nspB = w[8];

  // Masked LM: only at the masked positions; the decoder is the word
  // embedding, transposed (tied weights).
  Value gathered =
      GatherPositionsOp::create(b, loc, floats({batch, p, h}), x, positions);
  Value transformed = GeluOp::create(b, loc, linear(gathered, trW, trB));
  transformed = layerNorm(transformed, trLnS, trLnB);
  Value logits = linear(transformed, word, decoderBias);
  Value mlmSum = SoftmaxCrossEntropyOp::create(b, loc, scalar(), logits, labels,
                                               weights, m.vocab_size);
  Value mlmLoss = DivOp::create(b, loc, mlmSum, mlmCount);

  // Next-sentence prediction on the tanh pooler of token 0 (of each
  // sequence's [CLS] when packed).
  Value cls =
      packed ? GatherPositionsOp::create(b, loc, floats({batch, packs, h}), x,
                                         clsPositions)
                   .getResult()
             : TakeOp::create(b, loc, floats({batch, h}), x, 1, 0).getResult();
  Value pooled = TanhOp::create(b, loc, linear(cls, poolW, poolB));
  Value nspLogits = linear(pooled, nspW, nspB);
  // nspWeights is 1 for every sample in training; 0 marks the rows that pad
  // a partial evaluation batch.
  Value nspSum = SoftmaxCrossEntropyOp::create(b, loc, scalar(), nspLogits,
                                               nspLabels, nspWeights, 2);
  Value nspLoss =
      packed ? DivOp::create(b, loc, nspSum, nspCount).getResult()
             : ScaleOp::create(
                   b, loc, nspSum,
                   b.getF64FloatAttr(1.0 / static_cast<double>(
                                               cfg.training.global_batch_size)))
                   .getResult();

  Value loss = AddOp::create(b, loc, mlmLoss, nspLoss);
  // The numerators of the MLM and NSP accuracies (metrics; not
  // differentiated).
  Value mlmCorrect = ArgmaxCorrectOp::create(b, loc, scalar(), logits, labels,
                                             weights, m.vocab_size);
  Value nspCorrect = ArgmaxCorrectOp::create(b, loc, scalar(), nspLogits,
                                             nspLabels, nspWeights, 2);
  func::ReturnOp::create(
      b, loc, ValueRange{loss, mlmLoss, nspLoss, mlmCorrect, nspCorrect});
  return fn;
}

// @span_head(x, span_positions [B, 2], span_weights [B, 2], span_count,
//            qa.weight, qa.bias) -> (loss, span_correct, span_logits)
// BertForQuestionAnswering's head: logits = x qa.weightᵀ + qa.bias per
// token, as [B, 2, S] (start logits, then end logits); loss = the sum of
// the start and end cross-entropies over the weighted slots / span_count
// (the global batch's weighted slots, 2 a feature: HF's (start + end) / 2
// averaged over the batch); span_correct counts the slots whose argmax is
// the label (a metric).
func::FuncOp BertBuilder::buildSpanHead(ModuleOp module) {
  int64_t s = m.seq_length;
  SmallVector<Type> inputs = {hiddenType(), ints({batch, 2}),
                              floats({batch, 2}), scalar()};
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Heads))
    inputs.push_back(paramType(*spec, false));
  func::FuncOp fn = beginFunction(module, bert::kHeadsFn, inputs,
                                  {scalar(), scalar(), floats({batch, 2, s})});
  auto a = fn.getArguments();
  Value x = a[0], positions = a[1], weights = a[2], count = a[3];
  Value w = a[4], bias = a[5];
  Value perToken = linear(x, w, bias); // [B, S, 2]
  Value logits = TransposeOp::create(b, loc, floats({batch, 2, s}), perToken,
                                     b.getDenseI64ArrayAttr({0, 2, 1}));
  Value sum = SoftmaxCrossEntropyOp::create(b, loc, scalar(), logits, positions,
                                            weights, s);
  Value loss = DivOp::create(b, loc, sum, count);
  Value correct =
      ArgmaxCorrectOp::create(b, loc, scalar(), logits, positions, weights, s);
  func::ReturnOp::create(b, loc, ValueRange{loss, correct, logits});
  return fn;
}

Value BertBuilder::encoderStack(func::FuncOp layer, Value hidden, Value mask,
                                Value sequenceIds, Value keys, Value seed,
                                Value offset) {
  Value first = indexConstant(0);
  Value layers = indexConstant(m.layers);
  Value step = indexConstant(1);
  auto loop =
      scf::ForOp::create(b, loc, first, layers, step, ValueRange{hidden});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value l = loop.getInductionVar();
  SmallVector<Value> layerArgs = {loop.getRegionIterArgs()[0], mask};
  if (packed)
    layerArgs.append({sequenceIds, keys});
  layerArgs.append({seed, l, offset});
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Layer))
    layerArgs.push_back(ParameterSliceOp::create(
        b, loc, paramType(*spec, false), spec->name, l));
  Value y = func::CallOp::create(b, loc, layer, layerArgs).getResult(0);
  scf::YieldOp::create(b, loc, y);
  return loop.getResult(0);
}

// @forward(input_ids, segment_ids, input_mask, masked_lm_positions,
//          masked_lm_ids, masked_lm_weights, next_sentence_labels,
//          next_sentence_weights, mlm_count, seed, sample_offset)
//   -> (loss, mlm_loss, nsp_loss, mlm_correct, nsp_correct)
//
// Packed (K > 1): (input_ids, segment_ids, input_mask, sequence_ids,
//   position_ids, dropout_keys [B, S, 2], masked_lm_positions, masked_lm_ids,
//   masked_lm_weights, next_sentence_labels [B, K], next_sentence_weights [B,
//   K], cls_positions [B, K], mlm_count, nsp_count, seed, sample_offset).
//
// SQuAD (model.task squad): (input_ids, segment_ids, input_mask,
//   span_positions [B, 2], span_weights [B, 2], span_count, seed,
//   sample_offset) -> (loss, span_correct, span_logits [B, 2, S]), the
//   results named by `graph.output`.
void BertBuilder::buildForward(ModuleOp module, func::FuncOp embeddings,
                               func::FuncOp layer, func::FuncOp heads) {
  int64_t s = m.seq_length, p = m.max_predictions;
  // (name, type) of each input, in order.
  SmallVector<std::pair<StringRef, Type>> in = {
      {"input_ids", ints({batch, s})},
      {"segment_ids", ints({batch, s})},
      {"input_mask", ints({batch, s})}};
  if (packed)
    in.append({{"sequence_ids", ints({batch, s})},
               {"position_ids", ints({batch, s})},
               {"dropout_keys", keysType()}});
  if (m.squad())
    in.append({{"span_positions", ints({batch, 2})},
               {"span_weights", floats({batch, 2})},
               {"span_count", scalar()}});
  else
    in.append({{"masked_lm_positions", ints({batch, p})},
               {"masked_lm_ids", ints({batch, p})},
               {"masked_lm_weights", floats({batch, p})}});
  if (!m.squad() && packed)
    in.append({{"next_sentence_labels", ints({batch, packs})},
               {"next_sentence_weights", floats({batch, packs})},
               {"cls_positions", ints({batch, packs})},
               {"mlm_count", scalar()},
               {"nsp_count", scalar()}});
  else if (!m.squad())
    in.append({{"next_sentence_labels", ints({batch})},
               {"next_sentence_weights", floats({batch})},
               {"mlm_count", scalar()}});
  in.append({{"seed", b.getI64Type()}, {"sample_offset", b.getIndexType()}});
  SmallVector<Type> inputs;
  for (auto &[name, type] : in)
    inputs.push_back(type);
  func::FuncOp fn = beginFunction(module, bert::kForwardFn, inputs,
                                  heads.getFunctionType().getResults());
  graph::markEntry(fn, graph::Entry::Forward);
  llvm::StringMap<Value> arg;
  for (auto [i, input] : llvm::enumerate(in)) {
    fn.setArgAttr(i, ferry::graph::attrs::kInput, b.getStringAttr(input.first));
    arg[input.first] = fn.getArgument(i);
  }
  Value ids = arg["input_ids"], segments = arg["segment_ids"];
  Value inputMask = arg["input_mask"], positions = arg["masked_lm_positions"];
  Value labels = arg["masked_lm_ids"], weights = arg["masked_lm_weights"];
  Value nspLabels = arg["next_sentence_labels"];
  Value nspWeights = arg["next_sentence_weights"];
  Value mlmCount = arg["mlm_count"], seed = arg["seed"];
  Value offset = arg["sample_offset"];
  Value sequenceIds = packed ? arg["sequence_ids"] : Value();

  auto ref = [&](const bert::ParameterSpec &spec) -> Value {
    return ParameterRefOp::create(b, loc, paramType(spec, false), spec.name);
  };

  SmallVector<Value> embArgs = {ids, segments};
  if (packed)
    embArgs.append({arg["position_ids"], arg["dropout_keys"]});
  embArgs.append({seed, offset});
  size_t wordArg = embArgs.size();
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Embeddings))
    embArgs.push_back(ref(*spec));
  Value word = embArgs[wordArg];
  Value hidden = func::CallOp::create(b, loc, embeddings, embArgs).getResult(0);

  Value mask = AttentionMaskOp::create(b, loc, floats({batch, s}), inputMask,
                                       b.getF64FloatAttr(bert::kMaskFill));

  // The encoder stack: one loop, one call of the one layer body per layer,
  // with layer %l's weights sliced out of the stacked parameters.
  Value encoded =
      encoderStack(layer, hidden, mask, sequenceIds,
                   packed ? arg["dropout_keys"] : Value(), seed, offset);

  if (m.squad()) { // the span head
    SmallVector<Value> spanArgs = {encoded, arg["span_positions"],
                                   arg["span_weights"], arg["span_count"]};
    for (const bert::ParameterSpec *spec : blockParams(bert::Block::Heads))
      spanArgs.push_back(ref(*spec));
    auto call = func::CallOp::create(b, loc, heads, spanArgs);
    func::ReturnOp::create(b, loc, call.getResults());
    const StringRef names[] = {"loss", "span_correct", "span_logits"};
    for (auto [i, name] : llvm::enumerate(names))
      fn.setResultAttr(i, ferry::graph::attrs::kOutput, b.getStringAttr(name));
    return;
  }
  SmallVector<Value> headArgs = {encoded,   positions,  labels,   weights,
                                 nspLabels, nspWeights, mlmCount, word};
  if (packed)
    headArgs.append({arg["cls_positions"], arg["nsp_count"]});
  for (const bert::ParameterSpec *spec : blockParams(bert::Block::Heads))
    headArgs.push_back(ref(*spec));
  auto call = func::CallOp::create(b, loc, heads, headArgs);
  if (!m.eval_sequence_output) {
    func::ReturnOp::create(b, loc, call.getResults());
    return;
  }
  // The encoder's last hidden states as a sixth result: every result is
  // then named by `graph.output` (the metrics by their usual names), and
  // ferry-insert-eval stores the non-scalar one per micro-batch in
  // @output.eval.sequence_output.
  SmallVector<Value> results(call.getResults());
  results.push_back(encoded);
  SmallVector<Type> types(fn.getFunctionType().getResults());
  types.push_back(encoded.getType());
  fn.setFunctionType(b.getFunctionType(fn.getArgumentTypes(), types));
  func::ReturnOp::create(b, loc, results);
  // @heads' results, in order (buildHeads), then the hidden states.
  const StringRef metrics[] = {"loss", "mlm_loss", "nsp_loss", "mlm_correct",
                               "nsp_correct"};
  for (unsigned i = 0; i + 1 < results.size(); ++i)
    fn.setResultAttr(i, ferry::graph::attrs::kOutput,
                     b.getStringAttr(metrics[i]));
  fn.setResultAttr(results.size() - 1, ferry::graph::attrs::kOutput,
                   b.getStringAttr("sequence_output"));
}

OwningOpRef<ModuleOp> BertBuilder::build(StringRef name) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, name);
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  (*module)->setAttr(graph::attrs::kModel, b.getStringAttr("bert"));
  (*module)->setAttr(graph::attrs::kVocabSize, i64(m.vocab_size));
  (*module)->setAttr(graph::attrs::kPaddedVocabSize, i64(m.paddedVocabSize()));

  // The training settings the passes read (ferry-insert-optimizer).
  const TrainingConfig &t = cfg.training;
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  (*module)->setAttr(
      ferry::graph::attrs::kTraining,
      b.getDictionaryAttr({
          b.getNamedAttr("micro_batch_size", i64(batch)),
          b.getNamedAttr("global_batch_size", i64(t.global_batch_size)),
          b.getNamedAttr("data_parallel", i64(cfg.execution.data_parallel)),
          b.getNamedAttr("seed", i64(t.seed)),
          b.getNamedAttr("optimizer", b.getStringAttr(t.optimizer.name)),
          b.getNamedAttr("lr", f64(t.optimizer.lr)),
          b.getNamedAttr("beta1", f64(t.optimizer.beta1)),
          b.getNamedAttr("beta2", f64(t.optimizer.beta2)),
          b.getNamedAttr("epsilon", f64(t.optimizer.epsilon)),
          b.getNamedAttr("weight_decay", f64(t.optimizer.weight_decay)),
          b.getNamedAttr("clip_norm", f64(t.optimizer.clip_norm)),
          b.getNamedAttr("lr_schedule", b.getStringAttr(t.lr_schedule.kind)),
          b.getNamedAttr("warmup_steps", i64(t.lr_schedule.warmup_steps)),
          b.getNamedAttr("start_warmup_step",
                         i64(t.lr_schedule.start_warmup_step)),
          b.getNamedAttr("power", f64(t.lr_schedule.power)),
          b.getNamedAttr("total_steps", i64(t.lr_schedule.total_steps)),
      }));
  declareParameters(*module);
  func::FuncOp embeddings = buildEmbeddings(*module);
  func::FuncOp layer = buildEncoderLayer(*module);
  func::FuncOp heads = m.squad() ? buildSpanHead(*module) : buildHeads(*module);
  buildForward(*module, embeddings, layer, heads);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> ferry::bert::buildBertGraph(MLIRContext &context,
                                                  const Config &config,
                                                  StringRef name) {
  return BertBuilder(context, config).build(name);
}
