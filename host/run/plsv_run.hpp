// Runs of PLSV: a corpus (UCI bag-of-words, SVMlight, Matrix Market or plain text) -> document and
// topic coordinates, the topics' word distributions, their top words and a map; or, with
// input.model, the fold-in of new documents into a saved model.
#pragma once
#include <string>

#include "run/run_config.hpp"
#include "io/corpus.hpp"
#include "orrery/plsv.hpp"

namespace orrery::pipeline {

// The "input" keys of a PLSV run: the corpus (io/corpus.hpp) and, for fold-in, a saved model.
struct PlsvInputSpec {
  std::string corpus;
  io::CorpusFormat format = io::CorpusFormat::automatic;
  std::string vocab, labels;
  bool ids_from_zero = false;
  io::TextOptions text;
  std::string model;  // fold-in: the directory of a plsv run (topics.npy, theta.npy, vocab.txt)
};
const std::vector<Field<PlsvInputSpec>>& plsv_input_fields();
const std::vector<Field<io::TextOptions>>& text_fields();

// A PLSV run's corpus and parameters, read and checked (for `orrery check`).
struct PlsvRunSetup {
  Corpus corpus;
  PlsvParams params;
  std::string model_dir;  // fold-in
};
PlsvRunSetup read_plsv_setup(const RunConfig& run);

std::string validate_plsv(const RunConfig& run);
json run_plsv(const RunConfig& run, bool quiet, RunControl* control = nullptr);

}  // namespace orrery::pipeline
