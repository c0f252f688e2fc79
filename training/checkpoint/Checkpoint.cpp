// Hugging Face-named import/export of the executable's states, and training
// checkpoints (save, find the latest, load) as Checkpoint.h describes.
#include "training/checkpoint/Checkpoint.h"

#include "runtime/Progress.h"

#include "runtime/AtomicFile.h"
#include "runtime/comm/Communicator.h"
#include "runtime/executable/ShardLayout.h"
#include "training/checkpoint/TrainerJson.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace ferry;
using namespace ferry::ckpt;

namespace {

const char *kWordEmbedding = "bert.embeddings.word_embeddings.weight";
const char *kDecoderWeight = "cls.predictions.decoder.weight";
const char *kDecoderBias = "cls.predictions.bias";
const char *kDecoderBiasAlias = "cls.predictions.decoder.bias";
constexpr size_t kBertPrefixLength = 5; // "bert."

std::string shapeText(const std::vector<int64_t> &shape) {
  return "[" + fmt::format("{}", fmt::join(shape, ", ")) + "]";
}

// One named tensor of a state: layer `layer` of a stacked state, or all of it.
struct Slot {
  const fxe::State *state;
  std::string name;
  std::vector<int64_t> shape; // the full (padded) shape of this slot
  int64_t realRows;           // rows that exist outside ferry (leading dim)
  int64_t offsetElements;     // into the state's data
};

std::vector<Slot> slotsOf(const fxe::Executable &exe, fxe::Role role) {
  std::vector<Slot> slots;
  for (const fxe::State *s : *exe.states()) {
    if (s->role() != role)
      continue;
    if (s->dtype() != fxe::DType_F32)
      throw CheckpointError(fmt::format(
          "state {} is not fp32; checkpoints hold fp32 parameters and "
          "optimizer state",
          s->name()->str()));
    // A sharded or split state is named and shaped as its whole tensor.
    std::vector<int64_t> shape = stateLayoutOf(s).wholeShape;
    std::string hf = s->hf_name()->str();
    if (s->stacked()) {
      int64_t layers = shape.front();
      std::vector<int64_t> one(shape.begin() + 1, shape.end());
      int64_t elements = 1;
      for (int64_t d : one)
        elements *= d;
      for (int64_t l = 0; l < layers; ++l) {
        std::string name = hf;
        size_t at = name.find("{}");
        if (at == std::string::npos)
          throw CheckpointError(fmt::format(
              "stacked state {} has the name '{}' without a layer placeholder "
              "{{}}; the executable is malformed",
              s->name()->str(), hf));
        name.replace(at, 2, std::to_string(l));
        slots.push_back(
            {s, name, one, one.empty() ? 1 : one.front(), l * elements});
      }
    } else {
      int64_t rows = shape.empty() ? 1 : shape.front();
      if (s->init_rows() > 0 && s->init_rows() < rows)
        rows = s->init_rows();
      slots.push_back({s, hf, shape, rows, 0});
    }
  }
  return slots;
}

int64_t product(const std::vector<int64_t> &shape, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

// This tensor rank's part of a sharded state (the whole tensor if it is not
// split), gathered from every replica's shard: a collective, so every rank
// calls it for the same states in one order. One layer entry at a time;
// only the ranks that `keep` assemble it, the others only take part.
std::vector<float> gatherShards(Backend &backend, const fxe::State *s,
                                const ShardLayout &l, bool keep) {
  comm::Communicator &group = backend.group();
  if (group.size() != l.replicas)
    throw CheckpointError(
        fmt::format("state {} is sharded over {} replicas, but this run has {}",
                    s->name()->str(), l.replicas, group.size()));
  std::vector<float> mine(static_cast<size_t>(l.shard));
  std::vector<float> all(mine.size() * static_cast<size_t>(l.replicas));
  std::vector<float> part(keep ? static_cast<size_t>(l.layers * l.entry) : 0);
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    backend.read(s, layer * l.shard * 4, mine.data(), l.shard * 4);
    group.allGather(mine.data(), all.data(), l.shard * 4,
                    "the gather of " + s->name()->str() + " for a checkpoint");
    if (keep)
      std::copy_n(all.begin(), l.entry, part.begin() + layer * l.entry);
  }
  return part;
}

// The tensor group of a split state, checked against its parts.
comm::Communicator &tensorGroupOf(Backend &backend, const fxe::State *s,
                                  const SplitLayout &l) {
  comm::Communicator *group = backend.tensorGroup();
  int64_t ranks = group ? group->size() : 1;
  if (ranks != l.parts)
    throw CheckpointError(fmt::format(
        "state {} is split over {} tensor-parallel ranks, but this run has {}",
        s->name()->str(), l.parts, ranks));
  return *group;
}

// The whole tensor of a sharded or split state: the shards gathered over the
// data group into this tensor rank's part, then the parts over the tensor
// group. Collectives, so every rank calls it for the same states in one
// order; only the mesh's first rank keeps the result.
std::vector<float> gatherWhole(Backend &backend, const fxe::State *s,
                               const StateLayout &l) {
  const bool first = backend.firstOfMesh();
  if (!l.split)
    return gatherShards(backend, s, *l.shard, first);
  std::vector<float> mine;
  if (l.shard) {
    mine = gatherShards(backend, s, *l.shard, true);
  } else {
    mine.resize(static_cast<size_t>(l.split->elements));
    backend.read(s, 0, mine.data(), l.split->elements * 4);
  }
  comm::Communicator &group = tensorGroupOf(backend, s, *l.split);
  std::vector<float> all(mine.size() * static_cast<size_t>(l.split->parts));
  group.allGather(mine.data(), all.data(), l.split->elements * 4,
                  "the gather of " + s->name()->str() + " for a checkpoint");
  if (!first)
    return {};
  std::vector<float> whole(all.size());
  for (int64_t r = 0; r < l.split->parts; ++r)
    for (int64_t e = 0; e < l.split->elements; ++e)
      whole[l.split->wholeIndex(e, r)] = all[r * l.split->elements + e];
  return whole;
}

// Writes a sharded or split state's whole values: this rank keeps its
// shard of its part (zeros in a shard's padding).
void scatterWhole(Backend &backend, const fxe::State *s, const StateLayout &l,
                  const std::vector<float> &whole) {
  int dataRank = backend.group().rank(), tensorRank = 0;
  if (l.shard && backend.group().size() != l.shard->replicas)
    throw CheckpointError(fmt::format(
        "state {} is sharded over {} replicas, but this run has {}",
        s->name()->str(), l.shard->replicas, backend.group().size()));
  if (l.split)
    tensorRank = tensorGroupOf(backend, s, *l.split).rank();
  std::vector<float> mine(static_cast<size_t>(l.elements));
  for (int64_t e = 0; e < l.elements; ++e) {
    int64_t w = l.wholeIndex(e, dataRank, tensorRank);
    mine[e] = w < 0 ? 0.0f : whole[w];
  }
  backend.write(s, 0, mine.data(), s->bytes());
}

} // namespace

std::vector<Tensor> ckpt::exportStates(const fxe::Executable &exe,
                                       Backend &backend, fxe::Role role) {
  std::vector<Tensor> tensors;
  std::map<const fxe::State *, std::vector<float>> gathered;
  // Only the mesh's first rank writes: the others take part in each
  // gather, then drop it, so no other rank holds the whole model at once.
  const bool keep = backend.firstOfMesh();
  // Every rank checks the states first, so a malformed executable fails on
  // every rank before any gather (none is left waiting in one).
  const std::vector<Slot> slots = slotsOf(exe, role);
  if (!keep) {
    for (const fxe::State *s : *exe.states())
      if (s->role() == role)
        if (StateLayout l = stateLayoutOf(s); l.shard || l.split)
          gatherWhole(backend, s, l);
    return tensors;
  }
  for (const Slot &slot : slots) {
    std::vector<int64_t> shape = slot.shape;
    if (!shape.empty())
      shape.front() = slot.realRows;
    std::vector<float> values(static_cast<size_t>(product(shape)));
    if (StateLayout l = stateLayoutOf(slot.state); l.shard || l.split) {
      auto it = gathered.find(slot.state);
      if (it == gathered.end())
        it = gathered.emplace(slot.state, gatherWhole(backend, slot.state, l))
                 .first;
      std::copy_n(it->second.begin() + slot.offsetElements, values.size(),
                  values.begin());
    } else {
      backend.read(slot.state, slot.offsetElements * 4, values.data(),
                   static_cast<int64_t>(values.size()) * 4);
    }
    tensors.push_back(makeTensor(slot.name, shape, values.data(), DType::F32));
  }
  return tensors;
}

ImportReport ckpt::importStates(const fxe::Executable &exe, Backend &backend,
                                fxe::Role role, const SafetensorsFile &file,
                                const std::string &newHeadPrefix) {
  ImportReport report;
  std::set<std::string> used;
  std::map<const fxe::State *, std::vector<float>> wholes; // sharded states
  std::vector<std::string> problems;
  // A Hugging Face BertModel file (an encoder without pretraining heads, as
  // sentence-transformers and most fine-tuned encoders are published) names
  // its tensors without BertForPreTraining's "bert." prefix: they are looked
  // up with the prefix dropped, and the heads that only BertForPreTraining
  // has ("cls.") keep their initialisation, which is Hugging Face's scheme
  // (normal(0, initializer_range) matrices, zero biases, unit LayerNorm
  // scales, the decoder tied to the word embeddings).
  const bool encoderOnly = !file.find(kWordEmbedding) &&
                           !file.find(kDecoderWeight) &&
                           file.find(kWordEmbedding + kBertPrefixLength);
  if (encoderOnly)
    report.notes.push_back(fmt::format(
        "{} is a BertModel file (tensor names without the \"bert.\" prefix "
        "of BertForPreTraining): the encoder is read from it",
        file.path));
  std::vector<std::string> freshHeads; // pretraining heads a BertModel lacks
  auto lookup = [&](const std::string &name) -> const Tensor * {
    if (encoderOnly && name.rfind("bert.", 0) == 0)
      return file.find(name.substr(kBertPrefixLength));
    if (const Tensor *t = file.find(name))
      return t;
    // The tied decoder weight is the word embedding; the decoder bias has
    // two names. Either spelling of each is accepted.
    if (name == kWordEmbedding)
      if (const Tensor *t = file.find(kDecoderWeight)) {
        report.notes.push_back(fmt::format("{} taken from its tied alias {}",
                                           kWordEmbedding, kDecoderWeight));
        return t;
      }
    if (name == kDecoderBias)
      return file.find(kDecoderBiasAlias);
    return nullptr;
  };
  for (const Slot &slot : slotsOf(exe, role)) {
    const Tensor *t = lookup(slot.name);
    if (!t && encoderOnly && slot.name.rfind("cls.", 0) == 0) {
      freshHeads.push_back(slot.name);
      continue;
    }
    if (!t && !newHeadPrefix.empty() &&
        slot.name.rfind(newHeadPrefix, 0) == 0) {
      report.notes.push_back(fmt::format(
          "{} is not in the file: it keeps its initialisation (a new task "
          "head, as Hugging Face's from_pretrained gives it)",
          slot.name));
      continue;
    }
    if (!t) {
      // Named as the file would spell it.
      std::string name = encoderOnly && slot.name.rfind("bert.", 0) == 0
                             ? slot.name.substr(kBertPrefixLength)
                             : slot.name;
      problems.push_back(fmt::format("  {}: missing (expected {})", name,
                                     shapeText(slot.shape)));
      continue;
    }
    used.insert(t->name);
    if (t->dtype != DType::F32 && t->dtype != DType::F16 &&
        t->dtype != DType::BF16) {
      problems.push_back(
          fmt::format("  {}: dtype {}, expected F32, F16 or BF16", t->name,
                      dtypeName(t->dtype)));
      continue;
    }
    // The vocabulary's rows: at least vocab_size; more (a padded vocabulary)
    // are dropped. Every other shape must match exactly.
    bool vocabRows = slot.realRows < (slot.shape.empty() ? 1 : slot.shape[0]);
    bool ok =
        t->shape.size() == slot.shape.size() &&
        (slot.shape.empty() || std::equal(t->shape.begin() + 1, t->shape.end(),
                                          slot.shape.begin() + 1));
    if (ok && !slot.shape.empty())
      ok = vocabRows ? t->shape.front() >= slot.realRows
                     : t->shape.front() == slot.shape.front();
    if (!ok) {
      std::vector<int64_t> expected = slot.shape;
      if (vocabRows)
        expected.front() = slot.realRows;
      problems.push_back(fmt::format("  {}: expected {}, found {}", t->name,
                                     shapeText(expected), shapeText(t->shape)));
      continue;
    }
    std::vector<float> values = t->toFloat32();
    int64_t width = product(slot.shape, 1);
    int64_t rows = slot.shape.empty() ? 1 : slot.realRows;
    int64_t allRows = slot.shape.empty() ? 1 : slot.shape.front();
    values.resize(static_cast<size_t>(rows * width)); // extra rows dropped
    values.resize(static_cast<size_t>(allRows * width), 0.0f); // padding: 0
    if (StateLayout l = stateLayoutOf(slot.state); l.shard || l.split) {
      // Collected whole, scattered to this rank's shard or part below.
      std::vector<float> &whole = wholes[slot.state];
      whole.resize(static_cast<size_t>(l.wholeElements), 0.0f);
      std::copy(values.begin(), values.end(),
                whole.begin() + slot.offsetElements);
    } else {
      backend.write(slot.state, slot.offsetElements * 4, values.data(),
                    allRows * width * 4);
    }
    if (vocabRows && t->shape.front() != slot.realRows)
      report.notes.push_back(fmt::format(
          "{}: {} rows in the file, the model's vocabulary is {}; the extra "
          "rows are dropped",
          t->name, t->shape.front(), slot.realRows));
    ++report.tensors;
  }
  // Aliases present beside what they alias must agree with it.
  auto sameValues = [&](const char *a, const char *b) {
    const Tensor *ta = file.find(a), *tb = file.find(b);
    if (!ta || !tb || !used.count(a))
      return;
    used.insert(b);
    if (ta->shape != tb->shape || ta->toFloat32() != tb->toFloat32())
      problems.push_back(fmt::format(
          "  {}: differs from {}; ferry ties them (one tensor), so a "
          "checkpoint must hold equal values or only one of them",
          b, a));
  };
  if (role == fxe::Role_Parameter) {
    sameValues(kWordEmbedding, kDecoderWeight);
    sameValues(kDecoderBias, kDecoderBiasAlias);
  }
  if (!problems.empty())
    throw CheckpointError(fmt::format(
        "{}: does not match the model ({} problem{}):\n{}\ncheck that the "
        "config's model section (layers, hidden_size, ffn_size, vocab_size, "
        "max_positions, type_vocab_size) is the checkpoint's",
        file.path, problems.size(), problems.size() == 1 ? "" : "s",
        fmt::format("{}", fmt::join(problems, "\n"))));
  if (!freshHeads.empty())
    report.notes.push_back(fmt::format(
        "the pretraining heads are not in the BertModel file and keep their "
        "initialisation, as Hugging Face's BertForPreTraining.from_pretrained "
        "gives them: {}",
        fmt::join(freshHeads, ", ")));
  for (auto &[state, whole] : wholes)
    scatterWhole(backend, state, stateLayoutOf(state), whole);
  for (const Tensor &t : file.tensors)
    if (!used.count(t.name))
      report.unused.push_back(t.name);
  return report;
}

namespace {

std::string stepDirName(int64_t step) {
  return fmt::format("step-{:08d}", step);
}

// Step directories of `dir`, by step.
std::vector<std::pair<int64_t, fs::path>> stepDirs(const fs::path &dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || !entry.is_directory())
      continue;
    char *end = nullptr;
    long long step = std::strtoll(name.c_str() + 5, &end, 10);
    if (end && *end == '\0' && step >= 0)
      out.push_back({step, entry.path()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

void writeText(const fs::path &path, const std::string &text) {
  if (auto error = writeFileAtomically(path.string(), text))
    throw CheckpointError(*error);
}

std::string readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw CheckpointError(
        fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

std::string ckpt::saveCheckpoint(const std::string &dir,
                                 const fxe::Executable &exe, Backend &backend,
                                 const TrainerState &state, int64_t keep) {
  // Every replica takes part in gathering the sharded states; rank 0 alone
  // writes (the others return "").
  std::vector<Tensor> model = exportStates(exe, backend, fxe::Role_Parameter);
  std::vector<Tensor> optimizer =
      exportStates(exe, backend, fxe::Role_OptimizerState);
  if (!backend.firstOfMesh())
    return "";
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    throw CheckpointError(fmt::format("cannot create the save directory {}: {}",
                                      dir, ec.message()));
  std::string name = stepDirName(state.step);
  fs::path tmp = root / fmt::format(".tmp-{}-{}", name, ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec)
    throw CheckpointError(
        fmt::format("cannot create {}: {}", tmp.string(), ec.message()));
  // A progress line for checkpoints over 1 GiB (bert-large with Adam: 4 GiB).
  uint64_t modelBytes = 0, totalBytes = 0;
  for (const Tensor &tensor : model)
    modelBytes += tensor.data.size();
  totalBytes = modelBytes;
  for (const Tensor &tensor : optimizer)
    totalBytes += tensor.data.size();
  std::optional<Progress> progress;
  if (totalBytes >= (uint64_t{1} << 30) || Progress::forced())
    progress.emplace("saving " + (root / name).string(),
                     static_cast<double>(totalBytes), "",
                     Progress::Kind::Bytes);
  auto writtenFrom = [&](uint64_t base) {
    return [&progress, base](size_t written) {
      if (progress)
        progress->update(static_cast<double>(base + written));
    };
  };
  writeSafetensors((tmp / "model.safetensors").string(), model,
                   {{"format", "pt"}}, writtenFrom(0));
  writeSafetensors((tmp / "optimizer.safetensors").string(), optimizer, {},
                   writtenFrom(modelBytes));
  if (progress)
    progress->finish();
  writeText(tmp / "trainer.json", trainerJsonText(state));
  if (!state.huggingFaceConfig.empty())
    writeText(tmp / "config.json", state.huggingFaceConfig);

  fs::path final = root / name;
  if (fs::exists(final)) {
    // Saving the same step again (a rerun): the new one replaces it.
    fs::path old = root / fmt::format(".old-{}-{}", name, ::getpid());
    fs::rename(final, old, ec);
    if (ec)
      throw CheckpointError(
          fmt::format("cannot replace {}: {}", final.string(), ec.message()));
    fs::remove_all(old, ec);
  }
  fs::rename(tmp, final, ec);
  if (ec)
    throw CheckpointError(fmt::format("cannot rename {} to {}: {}",
                                      tmp.string(), final.string(),
                                      ec.message()));
  writeText(root / "latest", name + "\n");

  // Keep the newest `keep` step directories.
  auto dirs = stepDirs(root);
  for (size_t i = 0;
       i + static_cast<size_t>(std::max<int64_t>(keep, 1)) < dirs.size(); ++i)
    if (dirs[i].second != final)
      fs::remove_all(dirs[i].second, ec);
  return final.string();
}

std::string ckpt::resolveCheckpointDir(const std::string &dir) {
  fs::path root(dir);
  // DIR/latest itself names the save directory's latest checkpoint.
  if (root.filename() == "latest" && fs::is_regular_file(root))
    return resolveCheckpointDir(root.parent_path().string());
  if (!fs::is_directory(root))
    throw CheckpointError(fmt::format(
        "{}: not a directory; --resume takes a save directory (with a "
        "`latest` marker) or one of its step-NNNNNNNN directories",
        dir));
  if (fs::exists(root / "latest")) {
    std::string name = readText(root / "latest");
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    if (name.empty() || name.find('/') != std::string::npos)
      throw CheckpointError(fmt::format(
          "{}/latest holds '{}', not a step directory name", dir, name));
    fs::path step = root / name;
    if (!fs::is_directory(step))
      throw CheckpointError(fmt::format(
          "{}/latest names {}, which does not exist; point --resume at one of "
          "the step directories",
          dir, name));
    return step.string();
  }
  if (fs::exists(root / "trainer.json"))
    return root.string();
  throw CheckpointError(fmt::format(
      "{}: neither a save directory (no `latest` file) nor a checkpoint (no "
      "trainer.json)",
      dir));
}

TrainerState ckpt::loadCheckpoint(const std::string &stepDir,
                                  const fxe::Executable &exe,
                                  Backend &backend) {
  fs::path root(stepDir);
  fs::path trainerPath = root / "trainer.json";
  TrainerState state =
      parseTrainerJson(readText(trainerPath), trainerPath.string());
  SafetensorsFile model =
      readSafetensors((root / "model.safetensors").string());
  importStates(exe, backend, fxe::Role_Parameter, model);
  SafetensorsFile optimizer =
      readSafetensors((root / "optimizer.safetensors").string());
  ImportReport r =
      importStates(exe, backend, fxe::Role_OptimizerState, optimizer);
  if (!r.unused.empty())
    throw CheckpointError(fmt::format(
        "{}: holds {} tensor(s) this executable has no optimizer state for "
        "(first: {}); was it written with another optimizer or model?",
        optimizer.path, r.unused.size(), r.unused.front()));
  return state;
}

std::string ckpt::modelFileOf(const std::string &path) {
  fs::path p(path);
  if (p.filename() == "latest" && fs::is_regular_file(p))
    return (fs::path(resolveCheckpointDir(path)) / "model.safetensors")
        .string();
  if (fs::is_regular_file(p))
    return path;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "model.safetensors"))
      return (p / "model.safetensors").string();
    if (fs::exists(p / "latest"))
      return (fs::path(resolveCheckpointDir(path)) / "model.safetensors")
          .string();
    throw CheckpointError(fmt::format(
        "{}: a directory without model.safetensors or a `latest` marker; "
        "give a safetensors file, a step directory or a save directory",
        path));
  }
  throw CheckpointError(fmt::format("{}: no such file or directory", path));
}
