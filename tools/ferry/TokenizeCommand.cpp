// `ferry tokenize --vocab vocab.txt [TEXT]`: BERT's tokenizer
// (training/text, Hugging Face tokenizers' BertWordPieceTokenizer), the ids
// of each line of text (the argument, else each line of standard input), or
// with --tokens the WordPiece tokens.
#include "tools/ferry/Commands.h"

#include "training/data/DataError.h"
#include "training/text/Tokenizer.h"

#include <cstdio>
#include <iostream>
#include <string>

namespace ferry::cli {
namespace {

struct TokenizeOptions {
  std::string vocab, text;
  bool cased = false, tokens = false;
};

int runTokenize(const TokenizeOptions &o) {
  try {
    text::Vocab vocab = text::Vocab::load(o.vocab);
    text::Tokenizer tokenizer(vocab, !o.cased);
    auto print = [&](const std::string &line) {
      std::string out;
      for (int32_t id : tokenizer.encode(line)) {
        if (!out.empty())
          out += ' ';
        out += o.tokens ? vocab.token(id) : std::to_string(id);
      }
      std::printf("%s\n", out.c_str());
    };
    if (!o.text.empty()) {
      print(o.text);
      return 0;
    }
    std::string line;
    for (int64_t number = 1; std::getline(std::cin, line); ++number) {
      try {
        print(line);
      } catch (const data::DataError &e) {
        throw data::DataError("standard input, line " + std::to_string(number) +
                              ": " + e.what());
      }
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry tokenize: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

Runner addTokenizeCommand(CLI::App &app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App *cmd = app.add_subcommand(
      "tokenize",
      "Print the WordPiece ids of a line of text (or of each line of standard "
      "input) with a BERT vocabulary, as Hugging Face tokenizers' "
      "BertWordPieceTokenizer gives them (without [CLS] and [SEP])");
  cmd->add_option("--vocab", o->vocab,
                  "The vocabulary: vocab.txt, one token per line")
      ->required();
  cmd->add_option("text", o->text,
                  "The text; without it, each line of standard input");
  cmd->add_flag("--cased", o->cased,
                "A cased vocabulary: keep case and accents (default: "
                "lower-case and strip accents, for uncased vocabularies)");
  cmd->add_flag("--tokens", o->tokens, "Print the tokens instead of the ids");
  return [o] { return runTokenize(*o); };
}

} // namespace ferry::cli
