#include "io/corpus.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/readers.hpp"
#include "io/text_input.hpp"
#include "orrery/error.hpp"

namespace orrery::io {
namespace {

using namespace detail;
namespace fs = std::filesystem;

// Corpus::word is int32, which bounds the vocabulary (readers.hpp: kMaxDimension).
constexpr index_t kMaxWords = kMaxDimension;

using Vocab = std::vector<std::string>;

std::string at_line(const std::string& path, index_t line) { return in_quotes(path) + ", line " + std::to_string(line); }

void split_words(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
}

// Digits with an optional '-': ids and header fields, never "1.0" or "1e3".
bool parse_integer(std::string_view s, index_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// c_nw: a whole number >= 0 in any numeric notation ("3", "3.0", "3e0"); 0 means "absent".
double parse_count(std::string_view s, const std::string& where) {
  double v = 0;
  if (parse_cell(s, v) != Cell::number) input_error(where + ": expected a count (a whole number >= 0), found " + shown(s));
  if (v < 0) input_error(where + ": the count " + shown(s) + " is negative; counts must be whole numbers >= 0");
  if (v != std::floor(v)) input_error(where + ": the count " + shown(s) + " is not a whole number");
  return v;
}

std::string lower_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ends_with(name, ".gz")) name.resize(name.size() - 3);
  return name;
}

bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

CorpusFormat detect_format(const std::string& path) {
  if (is_directory(path)) return CorpusFormat::text;
  const std::string name = lower_name(path);
  if (ends_with(name, ".mtx")) return CorpusFormat::mtx;
  if (name.compare(0, 7, "docword") == 0) return CorpusFormat::uci;
  if (ends_with(name, ".svm") || ends_with(name, ".svmlight") || ends_with(name, ".libsvm")) return CorpusFormat::svmlight;
  if (ends_with(name, ".txt")) return CorpusFormat::text;
  input_error(in_quotes(path) + ": cannot tell the corpus format from the name; set the format (uci, svmlight, mtx, "
              "text) or name the file docword*.txt (uci), *.svm (svmlight), *.mtx or *.txt (text)");
}

// One word per line; a blank line inside the list would shift every later id, so it is an error.
Vocab read_vocab(const std::string& path) {
  const std::string text = Source(path).read_all();
  Vocab words;
  index_t blank_line = 0;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    std::string word = trim(line);
    if (word.empty()) {
      if (blank_line == 0) blank_line = line_no;
      return true;
    }
    if (blank_line != 0)
      input_error(at_line(path, blank_line) + ": expected a word (one word per line; the line number is the word id), "
                  "found an empty line");
    check_utf8(word, at_line(path, line_no));
    words.push_back(std::move(word));
    return true;
  });
  if (words.empty()) input_error(in_quotes(path) + ": no words found (expected one word per line)");
  return words;
}

// UCI and Matrix Market declare W; a word list of another length would misname words.
void attach_declared_vocab(Corpus& c, const std::string& vocab_path, const std::string& declared_by) {
  if (vocab_path.empty()) return;
  Vocab v = read_vocab(vocab_path);
  if (static_cast<index_t>(v.size()) != c.num_words)
    input_error(in_quotes(vocab_path) + " has " + std::to_string(v.size()) + " words, but " + declared_by + " declares " +
                std::to_string(c.num_words) + " words");
  c.vocab = std::move(v);
}

// Integer labels >= 0 are classes numbered in ascending order of value (their decimal text the
// names); anything else is a name, numbered in order of first appearance (so that "-1" in a binary
// SVMlight file is not read as "unknown"). `lines` gives each token's line, for messages.
void labels_from_tokens(const std::vector<std::string>& tokens, const std::vector<index_t>& lines,
                        const std::string& path, Corpus& c) {
  c.labels.assign(tokens.size(), -1);
  c.label_names.clear();
  std::vector<long long> values(tokens.size());
  bool numeric = true;
  for (size_t i = 0; numeric && i < tokens.size(); ++i) {
    index_t v = 0;
    numeric = parse_integer(tokens[i], v) && v >= 0;
    values[i] = v;
  }
  if (numeric) {
    Categories cat = integer_categories(values, path);
    c.labels = std::move(cat.index);
    c.label_names = std::move(cat.names);
    return;
  }
  for (size_t i = 0; i < tokens.size(); ++i) check_utf8(tokens[i], at_line(path, lines[i]) + ", the label");
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto [it, fresh] = index.emplace(tokens[i], static_cast<int>(c.label_names.size()));
    if (fresh) c.label_names.push_back(tokens[i]);
    c.labels[i] = it->second;
  }
}

// ---------------------------------------------------------------- (document, word, count) entries

struct Entry {
  index_t doc;
  std::int32_t word;
  double count;
  index_t source;  // where the entry came from, for messages: a line (uci) or a triple index (mtx)
};

// Sorts entries by (document, word) into c's rows, one row per document that has an entry, with
// the document's number in c.doc_index (finish() reads it). Documents without entries are only
// counted in c.skipped_empty, so a declared D or a large document id never sizes an array beyond
// the file's entries. `repeated(first, second)` must throw.
template <class F>
void entries_to_rows(std::vector<Entry>& e, index_t num_docs, Corpus& c, F&& repeated) {
  const auto before = [](const Entry& a, const Entry& b) { return a.doc != b.doc ? a.doc < b.doc : a.word < b.word; };
  if (!std::is_sorted(e.begin(), e.end(), before)) std::stable_sort(e.begin(), e.end(), before);
  c.row_ptr.assign(1, 0);
  c.word.reserve(e.size());
  c.count.reserve(e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    if (i > 0 && e[i].doc == e[i - 1].doc) {
      if (e[i].word == e[i - 1].word) repeated(e[i - 1], e[i]);
    } else {
      c.doc_index.push_back(e[i].doc);
      c.row_ptr.push_back(c.row_ptr.back());
    }
    ++c.row_ptr.back();
    c.word.push_back(e[i].word);
    c.count.push_back(e[i].count);
  }
  c.skipped_empty = num_docs - static_cast<index_t>(c.doc_index.size());
}

std::string outside_vocab(index_t id, const Vocab& vocab) {
  return "word id " + std::to_string(id) + " is outside the given vocabulary of " + std::to_string(vocab.size()) +
         " words";
}

// ---------------------------------------------------------------- uci

Corpus read_uci(const CorpusSpec& spec, const Vocab* fixed) {
  const std::string& path = spec.path;
  const std::string text = Source(path).read_all();
  static const char* const kHeader[3] = {"D (the number of documents)", "W (the vocabulary size)",
                                         "NNZ (the number of entries)"};
  index_t header[3] = {0, 0, 0}, header_line[3] = {0, 0, 0};
  int headers = 0;
  index_t entries = 0, last_line = 0;
  std::vector<Entry> e;
  std::vector<std::string_view> tok;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    split_words(line, tok);
    if (tok.empty()) return true;
    last_line = line_no;
    const std::string where = at_line(path, line_no);
    if (headers < 3) {
      if (tok.size() != 1 || !parse_integer(tok[0], header[headers]) || header[headers] < 0)
        input_error(where + ": expected the header line " + kHeader[headers] + ", a whole number >= 0, found " +
                    shown(trim(line)));
      if (headers < 2 && header[headers] > kMaxDimension)
        input_error(where + ": " + kHeader[headers] + " = " + std::to_string(header[headers]) +
                    " exceeds the supported " + std::to_string(kMaxDimension));
      // Each entry is a line of at least "d w c\n": NNZ must fit in the file before it sizes anything.
      if (headers == 2 && header[2] > static_cast<index_t>(text.size()) / 6)
        input_error(where + ": " + kHeader[2] + " = " + std::to_string(header[2]) +
                    " needs at least 6 bytes per entry line, but the file holds only " + std::to_string(text.size()) +
                    " bytes");
      header_line[headers++] = line_no;
      if (headers == 3) e.reserve(static_cast<size_t>(header[2]));
      return true;
    }
    if (tok.size() != 3) input_error(where + ": expected 'docID wordID count', found " + shown(trim(line)));
    if (++entries > header[2])
      input_error(where + ": one entry more than the " + std::to_string(header[2]) + " declared by NNZ on line " +
                  std::to_string(header_line[2]));
    index_t d = 0, w = 0;
    if (!parse_integer(tok[0], d) || d < 1 || d > header[0])
      input_error(where + ": expected a document id from 1 to D = " + std::to_string(header[0]) + ", found " +
                  shown(tok[0]));
    if (!parse_integer(tok[1], w) || w < 1 || w > header[1])
      input_error(where + ": expected a word id from 1 to W = " + std::to_string(header[1]) + ", found " + shown(tok[1]));
    if (fixed && w > static_cast<index_t>(fixed->size())) input_error(where + ": " + outside_vocab(w, *fixed));
    const double count = parse_count(tok[2], where);
    if (count > 0) e.push_back({d - 1, static_cast<std::int32_t>(w - 1), count, line_no});
    return true;
  });
  if (headers < 3)
    input_error(in_quotes(path) + ": expected three header lines D, W, NNZ, found " + std::to_string(headers) +
                " (the file is empty or truncated)");
  if (entries < header[2])
    input_error(in_quotes(path) + ": NNZ on line " + std::to_string(header_line[2]) + " declares " +
                std::to_string(header[2]) + " entries, found " + std::to_string(entries) + " (the last on line " +
                std::to_string(last_line) + ")");
  Corpus c;
  c.num_words = header[1];
  entries_to_rows(e, header[0], c, [&](const Entry& a, const Entry& b) {
    input_error(in_quotes(path) + ": document " + std::to_string(a.doc + 1) + ", word " + std::to_string(a.word + 1) +
                " is listed twice, on lines " + std::to_string(a.source) + " and " + std::to_string(b.source));
  });
  if (fixed) {
    c.num_words = static_cast<index_t>(fixed->size());
    c.vocab = *fixed;
  } else {
    attach_declared_vocab(c, spec.vocab, at_line(path, header_line[1]));
  }
  return c;
}

// ---------------------------------------------------------------- mtx

// read_mtx keeps no line numbers, so the (rare) error path reads the file again to find the line
// of triple k. A symmetric file's mirrored triple follows its original.
index_t mtx_line_of(const std::string& path, const SparseTriples& t, size_t k) {
  // In memory (io/memory_inputs.hpp) entries have no lines: an entry's position in the list stands for one.
  if (memory_sparse(path)) return static_cast<index_t>(k) + 1;
  const std::string text = Source(path).read_all();
  std::string header = text.substr(0, text.find('\n'));
  for (char& ch : header) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool symmetric = header.find("symmetric") != std::string::npos;
  index_t entry = -1;
  for (size_t i = 0; i <= k; i += symmetric && t.row[i] != t.col[i] ? 2 : 1) ++entry;
  index_t data_lines = 0, found = 0;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    const std::string s = trim(line);
    if (line_no == 1 || s.empty() || s[0] == '%') return true;
    if (data_lines++ == entry + 1) {  // the first data line is the size line
      found = line_no;
      return false;
    }
    return true;
  });
  return found;
}

Corpus read_mtx_corpus(const CorpusSpec& spec, const Vocab* fixed) {
  const std::string& path = spec.path;
  const SparseTriples t = read_mtx(path);
  if (t.cols > kMaxWords)
    input_error(in_quotes(path) + ": " + std::to_string(t.cols) + " columns (words) exceed the supported " +
                std::to_string(kMaxWords));
  const auto where = [&](size_t k) {
    return at_line(path, mtx_line_of(path, t, k)) + " (document " + std::to_string(t.row[k] + 1) + ", word " +
           std::to_string(t.col[k] + 1) + ")";
  };
  std::vector<Entry> e;
  e.reserve(t.val.size());
  for (size_t k = 0; k < t.val.size(); ++k) {
    const double v = t.val[k];
    if (v < 0 || v != std::floor(v))
      input_error(where(k) + ": expected a count (a whole number >= 0), found " + number_text(v));
    if (fixed && t.col[k] >= static_cast<index_t>(fixed->size()))
      input_error(where(k) + ": " + outside_vocab(t.col[k] + 1, *fixed));
    if (v > 0) e.push_back({t.row[k], static_cast<std::int32_t>(t.col[k]), v, static_cast<index_t>(k)});
  }
  Corpus c;
  c.num_words = t.cols;
  entries_to_rows(e, t.rows, c, [&](const Entry& a, const Entry& b) {
    input_error(in_quotes(path) + ": entry (row " + std::to_string(a.doc + 1) + ", column " + std::to_string(a.word + 1) +
                ") is listed twice, on lines " + std::to_string(mtx_line_of(path, t, static_cast<size_t>(a.source))) +
                " and " + std::to_string(mtx_line_of(path, t, static_cast<size_t>(b.source))));
  });
  if (fixed) {
    c.num_words = static_cast<index_t>(fixed->size());
    c.vocab = *fixed;
  } else {
    attach_declared_vocab(c, spec.vocab, "the size line of " + in_quotes(path));
  }
  return c;
}

// ---------------------------------------------------------------- svmlight

Corpus read_svmlight(const CorpusSpec& spec, const Vocab* fixed) {
  const std::string& path = spec.path;
  const std::string text = Source(path).read_all();
  const index_t base = spec.ids_from_zero ? 0 : 1;
  Corpus c;
  std::vector<std::string> label_tokens;
  std::vector<index_t> label_lines;
  index_t max_word = -1, max_word_line = 0;
  std::vector<std::string_view> tok;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    split_words(line.substr(0, line.find('#')), tok);
    if (tok.empty()) return true;
    const std::string where = at_line(path, line_no);
    if (tok[0].find(':') != std::string_view::npos)
      input_error(where + ": expected a label before the 'id:count' pairs, found " + shown(tok[0]));
    label_tokens.emplace_back(tok[0]);
    label_lines.push_back(line_no);
    index_t prev = -1;
    for (size_t i = 1; i < tok.size(); ++i) {
      if (tok[i].compare(0, 4, "qid:") == 0) continue;  // ranking files: a query id, not a word
      const size_t colon = tok[i].find(':');
      if (colon == std::string_view::npos) input_error(where + ": expected 'id:count', found " + shown(tok[i]));
      index_t id = 0;
      if (!parse_integer(tok[i].substr(0, colon), id) || id < base || id - base >= kMaxWords)
        input_error(where + ": expected a word id >= " + std::to_string(base) +
                    (spec.ids_from_zero ? "" : " (ids are 1-based; set ids_from_zero for 0-based files)") + ", found " +
                    shown(tok[i]));
      const index_t w = id - base;
      if (w <= prev)
        input_error(where + ": word ids must ascend within a line, found " + shown(tok[i]) + " after id " +
                    std::to_string(prev + base));
      if (fixed && w >= static_cast<index_t>(fixed->size())) input_error(where + ": " + outside_vocab(id, *fixed));
      prev = w;
      const double count = parse_count(tok[i].substr(colon + 1), where + ", word id " + std::to_string(id));
      if (count == 0) continue;
      c.word.push_back(static_cast<std::int32_t>(w));
      c.count.push_back(count);
      if (w > max_word) max_word = w, max_word_line = line_no;
    }
    c.row_ptr.push_back(static_cast<index_t>(c.word.size()));
    return true;
  });
  if (label_tokens.empty()) input_error(in_quotes(path) + ": no documents found (only blank or comment lines)");
  labels_from_tokens(label_tokens, label_lines, path, c);
  c.num_words = max_word + 1;
  if (fixed) {
    c.num_words = static_cast<index_t>(fixed->size());
    c.vocab = *fixed;
  } else if (!spec.vocab.empty()) {
    c.vocab = read_vocab(spec.vocab);
    if (static_cast<index_t>(c.vocab.size()) <= max_word)
      input_error(in_quotes(spec.vocab) + " has " + std::to_string(c.vocab.size()) + " words, but " +
                  at_line(path, max_word_line) + " uses word id " + std::to_string(max_word + base));
    c.num_words = static_cast<index_t>(c.vocab.size());
  }
  return c;
}

// ---------------------------------------------------------------- text

// Turns documents into sorted (word, count) rows. Without a fixed word list every new word is
// interned and the vocabulary is chosen at the end (choose_vocabulary), so the result does not
// depend on the order in which words first appear; with one, tokens are looked up in it.
class TextCollector {
 public:
  TextCollector(const TextOptions& opt, const Vocab* fixed) : opt_(opt), fixed_(fixed != nullptr) {
    if (!fixed) return;
    for (size_t i = 0; i < fixed->size(); ++i) {
      ids_.emplace((*fixed)[i], static_cast<std::int32_t>(i));  // a repeated word: its first line wins
      stop_.push_back(is_stop((*fixed)[i]));
    }
  }

  void add(std::string_view text) {
    row_.clear();
    std::string tok;
    for (size_t i = 0; i <= text.size(); ++i) {
      const char ch = i < text.size() ? text[i] : ' ';
      if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
        tok.push_back(static_cast<char>(ch | 0x20));
        continue;
      }
      if (static_cast<index_t>(tok.size()) >= opt_.min_token_length) {
        const auto it = ids_.find(tok);
        const std::int32_t id = it != ids_.end() ? it->second : fixed_ ? -1 : intern(tok);
        if (id >= 0 && !stop_[static_cast<size_t>(id)]) row_.push_back(id);
      }
      tok.clear();
    }
    std::sort(row_.begin(), row_.end());
    for (size_t i = 0; i < row_.size(); ++i) {
      if (i == 0 || row_[i] != row_[i - 1]) {
        c_.word.push_back(row_[i]);
        c_.count.push_back(0.0);
      }
      c_.count.back() += 1.0;
    }
    c_.row_ptr.push_back(static_cast<index_t>(c_.word.size()));
  }

  // The vocabulary: words (not stop words) in >= min_df documents, then the max_vocab with the
  // highest document frequency (ties by word), numbered in sorted order.
  Corpus take_pruned() {
    std::vector<index_t> df(words_.size(), 0);
    for (std::int32_t w : c_.word) ++df[static_cast<size_t>(w)];
    std::vector<std::int32_t> kept;
    for (size_t w = 0; w < words_.size(); ++w)
      if (!stop_[w] && df[w] >= opt_.min_df) kept.push_back(static_cast<std::int32_t>(w));
    const auto by_word = [&](std::int32_t a, std::int32_t b) {
      return words_[static_cast<size_t>(a)] < words_[static_cast<size_t>(b)];
    };
    if (opt_.max_vocab > 0 && static_cast<index_t>(kept.size()) > opt_.max_vocab) {
      std::sort(kept.begin(), kept.end(), [&](std::int32_t a, std::int32_t b) {
        const index_t da = df[static_cast<size_t>(a)], db = df[static_cast<size_t>(b)];
        return da != db ? da > db : by_word(a, b);
      });
      kept.resize(static_cast<size_t>(opt_.max_vocab));
    }
    std::sort(kept.begin(), kept.end(), by_word);
    std::vector<std::int32_t> new_id(words_.size(), -1);
    Corpus out;
    for (size_t k = 0; k < kept.size(); ++k) {
      new_id[static_cast<size_t>(kept[k])] = static_cast<std::int32_t>(k);
      out.vocab.push_back(words_[static_cast<size_t>(kept[k])]);
    }
    out.num_words = static_cast<index_t>(out.vocab.size());
    std::vector<std::pair<std::int32_t, double>> row;
    for (index_t d = 0; d < c_.num_docs(); ++d) {
      row.clear();
      for (index_t i = c_.row_ptr[static_cast<size_t>(d)]; i < c_.row_ptr[static_cast<size_t>(d) + 1]; ++i) {
        const std::int32_t w = new_id[static_cast<size_t>(c_.word[static_cast<size_t>(i)])];
        if (w >= 0) row.emplace_back(w, c_.count[static_cast<size_t>(i)]);
      }
      std::sort(row.begin(), row.end());
      for (const auto& [w, n] : row) out.word.push_back(w), out.count.push_back(n);
      out.row_ptr.push_back(static_cast<index_t>(out.word.size()));
    }
    return out;
  }

  // Fixed mode: ids are already the word list's.
  Corpus take_fixed(const Vocab& vocab) {
    c_.num_words = static_cast<index_t>(vocab.size());
    c_.vocab = vocab;
    return std::move(c_);
  }

 private:
  bool is_stop(const std::string& word) const {
    const auto& stop = english_stop_words();
    return opt_.stop_words && std::binary_search(stop.begin(), stop.end(), word);
  }

  std::int32_t intern(const std::string& word) {
    const auto id = static_cast<std::int32_t>(words_.size());
    ids_.emplace(word, id);
    words_.push_back(word);
    stop_.push_back(is_stop(word));
    return id;
  }

  TextOptions opt_;
  bool fixed_;
  std::unordered_map<std::string, std::int32_t> ids_;
  Vocab words_;
  std::vector<char> stop_;
  std::vector<std::int32_t> row_;
  Corpus c_;
};

// Regular files below dir (hidden files and directories left out), relative, '/'-separated, sorted.
std::vector<std::string> list_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path root(dir);
  fs::recursive_directory_iterator it(root, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;  // an entry that cannot be inspected is not a readable document
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(type_ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(type_ec)) {
      files.push_back(it->path().lexically_relative(root).generic_string());
      check_utf8(files.back(), "directory " + in_quotes(dir) + ", the file name");  // doc name and label
    }
  }
  if (ec) input_error("cannot read directory " + in_quotes(dir) + ": " + ec.message());
  if (files.empty()) input_error(in_quotes(dir) + ": the directory holds no files (expected one text file per document)");
  std::sort(files.begin(), files.end());
  return files;
}

void check_text_options(const TextOptions& o) {
  if (o.min_df < 0) input_error("corpus text option min_df must be >= 0, found " + std::to_string(o.min_df));
  if (o.max_vocab < 0)
    input_error("corpus text option max_vocab must be >= 0 (0: no limit), found " + std::to_string(o.max_vocab));
  if (o.min_token_length < 1)
    input_error("corpus text option min_token_length must be >= 1, found " + std::to_string(o.min_token_length));
}

Corpus read_text_corpus(const CorpusSpec& spec, const Vocab* fixed) {
  check_text_options(spec.text);
  TextCollector collect(spec.text, fixed);
  std::vector<std::string> names, dirs;
  if (is_directory(spec.path)) {
    names = list_files(spec.path);
    for (const std::string& f : names) {
      const size_t slash = f.find('/');
      dirs.push_back(slash == std::string::npos ? std::string() : f.substr(0, slash));
      collect.add(Source((fs::path(spec.path) / f).string()).read_all());
    }
  } else {
    const std::string text = Source(spec.path).read_all();
    for_each_line(text, [&](index_t line_no, std::string_view line) {
      collect.add(line);
      names.push_back("line " + std::to_string(line_no));
      return true;
    });
    if (names.empty()) input_error(in_quotes(spec.path) + ": the file is empty (expected one document per line)");
  }
  Corpus c = fixed ? collect.take_fixed(*fixed) : collect.take_pruned();
  c.doc_names = std::move(names);
  // Subdirectory names are labels, numbered in sorted order; files at the top have none (-1).
  std::vector<std::string> label_names(dirs);
  std::sort(label_names.begin(), label_names.end());
  label_names.erase(std::unique(label_names.begin(), label_names.end()), label_names.end());
  if (!label_names.empty() && label_names.front().empty()) label_names.erase(label_names.begin());
  if (!label_names.empty()) {
    for (const std::string& d : dirs) {
      const auto at = std::lower_bound(label_names.begin(), label_names.end(), d);
      c.labels.push_back(at != label_names.end() && *at == d ? static_cast<int>(at - label_names.begin()) : -1);
    }
    c.label_names = std::move(label_names);
  }
  return c;
}

// ---------------------------------------------------------------- labels, empty documents

// A label file holds one label per input document, read by io::read_categories (numbers or names,
// -1 unlabelled, classes in ascending order of value); label_names keeps the original values.
// `docs` counts the documents without a row too (entries_to_rows lists only those with entries).
void read_label_file(const std::string& path, const std::string& input, index_t docs, Corpus& c) {
  Categories cat = read_categories(path);
  c.labels = std::move(cat.index);
  c.label_names = std::move(cat.names);
  if (c.labels.size() != static_cast<size_t>(docs))
    input_error(in_quotes(path) + " has " + std::to_string(c.labels.size()) + " labels, but " + in_quotes(input) +
                " has " + std::to_string(docs) + " documents (one label per input document, empty ones included)");
}

Corpus finish(Corpus all, const CorpusSpec& spec, const std::string& empty_hint) {
  const index_t docs = all.num_docs() + all.skipped_empty;
  if (!spec.labels.empty()) read_label_file(spec.labels, spec.path, docs, all);
  Corpus c;
  c.skipped_empty = all.skipped_empty;
  c.num_words = all.num_words;
  c.vocab = std::move(all.vocab);
  c.label_names = std::move(all.label_names);
  for (index_t r = 0; r < all.num_docs(); ++r) {
    // rows are documents 0..n-1, or (entries_to_rows) the documents listed in all.doc_index
    const index_t d = all.doc_index.empty() ? r : all.doc_index[static_cast<size_t>(r)];
    const auto b = static_cast<size_t>(all.row_ptr[static_cast<size_t>(r)]);
    const auto e = static_cast<size_t>(all.row_ptr[static_cast<size_t>(r) + 1]);
    if (b == e) {
      ++c.skipped_empty;
      continue;
    }
    c.word.insert(c.word.end(), all.word.begin() + b, all.word.begin() + e);
    c.count.insert(c.count.end(), all.count.begin() + b, all.count.begin() + e);
    c.row_ptr.push_back(static_cast<index_t>(c.word.size()));
    c.doc_index.push_back(d);
    if (!all.doc_names.empty()) c.doc_names.push_back(std::move(all.doc_names[static_cast<size_t>(d)]));
    if (!all.labels.empty()) c.labels.push_back(all.labels[static_cast<size_t>(d)]);
  }
  if (c.num_docs() == 0)
    input_error(in_quotes(spec.path) + ": none of its " + std::to_string(docs) + " documents has a word" +
                empty_hint);
  return c;
}

Corpus read_any(const CorpusSpec& spec, const Vocab* fixed) {
  if (spec.path.empty()) input_error("corpus: no input path given");
  const CorpusFormat format = spec.format == CorpusFormat::automatic ? detect_format(spec.path) : spec.format;
  if (format != CorpusFormat::text && is_directory(spec.path))
    input_error(in_quotes(spec.path) + " is a directory; only the text format reads a directory of documents");
  switch (format) {
    case CorpusFormat::uci: return finish(read_uci(spec, fixed), spec, "");
    case CorpusFormat::svmlight: return finish(read_svmlight(spec, fixed), spec, "");
    case CorpusFormat::mtx: return finish(read_mtx_corpus(spec, fixed), spec, "");
    default: break;
  }
  const TextOptions& o = spec.text;
  const std::string hint =
      fixed ? " of the given vocabulary"
            : " left after tokenising and vocabulary pruning (min_df = " + std::to_string(o.min_df) +
                  ", max_vocab = " + std::to_string(o.max_vocab) + ", min_token_length = " +
                  std::to_string(o.min_token_length) + ", stop_words = " + (o.stop_words ? "true" : "false") + ")";
  return finish(read_text_corpus(spec, fixed), spec, hint);
}

}  // namespace

CorpusFormat parse_corpus_format(const std::string& name, const std::string& where) {
  const auto& names = EnumNames<CorpusFormat>::names;
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) return static_cast<CorpusFormat>(i);
    list += (i ? ", " : "") + std::string(names[i]);
  }
  if (name == "automatic") return CorpusFormat::automatic;
  input_error(where + ": unknown corpus format " + shown(name) + "; expected one of " + list);
}

Corpus read_corpus(const CorpusSpec& spec) { return read_any(spec, nullptr); }

std::string vocabulary_origin(const CorpusSpec& spec, const Corpus& c) {
  const std::string& path = spec.path;
  const std::string W = std::to_string(c.num_words);
  const CorpusFormat format = spec.format == CorpusFormat::automatic ? detect_format(path) : spec.format;
  if (format == CorpusFormat::text)
    return "the " + W + " words the text keeps (input.text.min_df and max_vocab choose them)";
  if (!spec.vocab.empty()) return "the word list " + in_quotes(spec.vocab) + " (" + W + " words)";
  index_t largest = -1;  // the largest word id used, 0-based
  for (std::int32_t w : c.word) largest = std::max<index_t>(largest, w);
  // The line of the largest id (or of the declaration) is not kept while reading: the file is read
  // again to find it, only for this message.
  const std::string text = memory_sparse(path) ? std::string() : Source(path).read_all();
  if (format == CorpusFormat::svmlight) {
    const index_t base = spec.ids_from_zero ? 0 : 1;
    index_t top = -1, top_line = 0;
    std::vector<std::string_view> tok;
    for_each_line(text, [&](index_t line_no, std::string_view line) {
      split_words(line.substr(0, line.find('#')), tok);
      for (size_t i = 1; i < tok.size(); ++i) {
        index_t id = 0;
        if (tok[i].compare(0, 4, "qid:") != 0 && parse_integer(tok[i].substr(0, tok[i].find(':')), id) && id > top)
          top = id, top_line = line_no;
      }
      return true;
    });
    return at_line(path, top_line) + ", word id " + std::to_string(top) + ": W is the largest word id" +
           (base ? "" : " + 1") + " when no word list (input.vocab) gives it";
  }
  // uci: the second header line declares W; mtx: the size line (the first after the banner and comments)
  index_t declared = 0, seen = 0;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    const std::string t = trim(line);
    if (t.empty() || (format == CorpusFormat::mtx && (line_no == 1 || t[0] == '%'))) return true;
    if (++seen == (format == CorpusFormat::uci ? 2 : 1)) {
      declared = line_no;
      return false;
    }
    return true;
  });
  const std::string used = "; the largest word id used is " + std::to_string(largest + 1);
  if (declared == 0) return in_quotes(path) + ", which declares W = " + W + used;
  return at_line(path, declared) + (format == CorpusFormat::uci ? ", which declares W = " + W
                                                                 : ", the size line, which declares " + W + " columns (words)") +
         used;
}

Corpus read_corpus_with_vocab(const CorpusSpec& spec, const std::vector<std::string>& vocab) {
  if (vocab.empty()) input_error(in_quotes(spec.path) + ": the vocabulary to map the documents onto is empty");
  if (static_cast<index_t>(vocab.size()) > kMaxWords)
    input_error("a vocabulary of " + std::to_string(vocab.size()) + " words exceeds the supported " +
                std::to_string(kMaxWords));
  return read_any(spec, &vocab);
}

// Letters-only English function words (the tokenizer splits "don't" into "don" and "t"), after
// the common NLTK/Glasgow lists; sorted, so that lookups can bisect.
const std::vector<std::string>& english_stop_words() {
  static const std::vector<std::string> words = {
      "a",         "about",   "above",     "across",  "after",    "afterwards", "again",    "against",  "all",
      "almost",    "alone",   "along",     "already", "also",     "although",   "always",   "am",       "among",
      "amongst",   "an",      "and",       "another", "any",      "anyhow",     "anyone",   "anything", "anyway",
      "anywhere",  "are",     "aren",      "around",  "as",       "at",         "be",       "became",   "because",
      "become",    "becomes", "becoming",  "been",    "before",   "beforehand", "behind",   "being",    "below",
      "beside",    "besides", "between",   "beyond",  "both",     "but",        "by",       "can",      "cannot",
      "could",     "couldn",  "d",         "did",     "didn",     "do",         "does",     "doesn",    "doing",
      "don",       "done",    "down",      "during",  "each",     "eg",         "either",   "else",     "elsewhere",
      "enough",    "etc",     "even",      "ever",    "every",    "everyone",   "everything", "everywhere", "except",
      "few",       "for",     "former",    "formerly", "from",    "further",    "furthermore", "had",   "hadn",
      "has",       "hasn",    "have",      "haven",   "having",   "he",         "hence",    "her",      "here",
      "hereafter", "hereby",  "herein",    "hers",    "herself",  "him",        "himself",  "his",      "how",
      "however",   "i",       "ie",        "if",      "in",       "indeed",     "into",     "is",       "isn",
      "it",        "its",     "itself",    "just",    "latter",   "latterly",   "least",    "less",     "ll",
      "m",         "ma",      "many",      "may",     "me",       "meanwhile",  "might",    "mightn",   "more",
      "moreover",  "most",    "mostly",    "much",    "must",     "mustn",      "my",       "myself",   "namely",
      "needn",     "neither", "never",     "nevertheless", "no",  "nobody",     "none",     "nor",      "not",
      "nothing",   "now",     "nowhere",   "o",       "of",       "off",        "often",    "on",       "once",
      "only",      "onto",    "or",        "other",   "others",   "otherwise",  "our",      "ours",     "ourselves",
      "out",       "over",    "own",       "per",     "perhaps",  "rather",     "re",       "s",        "same",
      "shan",      "she",     "should",    "shouldn", "since",    "so",         "some",     "somehow",  "someone",
      "something", "sometime", "sometimes", "somewhere", "still", "such",       "t",        "than",     "that",
      "the",       "their",   "theirs",    "them",    "themselves", "then",     "thence",   "there",    "thereafter",
      "thereby",   "therefore", "therein", "thereupon", "these",  "they",       "this",     "those",    "though",
      "through",   "throughout", "thru",   "thus",    "to",       "together",   "too",      "toward",   "towards",
      "under",     "until",   "up",        "upon",    "us",       "ve",         "very",     "via",      "was",
      "wasn",      "we",      "were",      "weren",   "what",     "whatever",   "when",     "whence",   "whenever",
      "where",     "whereafter", "whereas", "whereby", "wherein", "whereupon",  "wherever", "whether",  "which",
      "while",     "whither", "who",       "whoever", "whole",    "whom",       "whose",    "why",      "will",
      "with",      "within",  "without",   "won",     "would",    "wouldn",     "y",        "yet",      "you",
      "your",      "yours",   "yourself",  "yourselves"};
  return words;
}

}  // namespace orrery::io
