// Parsing of transaction text (txn_grammar.h): a small scanner for one line, the compare and operation
// grammars on top of it, and the three-section file format.
#include "clients/cli/txn_grammar.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cli/key_range.h"

namespace revkv::client {
namespace {

absl::Status Invalid(absl::string_view what) { return absl::InvalidArgumentError(what); }

// A word of an operation line; `quoted` when any part of it was quoted (so it is never a flag).
struct Word {
  std::string text;
  bool quoted = false;
};

// Reads one line left to right. Owner thread only.
class LineScanner {
 public:
  explicit LineScanner(absl::string_view text) : text_(text) {}

  void SkipBlanks() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() {
    SkipBlanks();
    return pos_ >= text_.size();
  }
  // Consumes `literal` if the line continues with it (after blanks).
  bool Consume(absl::string_view literal) {
    SkipBlanks();
    if (!absl::StartsWith(text_.substr(pos_), literal)) return false;
    pos_ += literal.size();
    return true;
  }
  // Letters and underscores (after blanks); empty if there are none.
  std::string Identifier() {
    SkipBlanks();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (absl::ascii_isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  // One word (after blanks): bare characters up to a blank or one of `stops`, and quoted strings,
  // concatenated. NOT_FOUND at the end of the line or at a stop character.
  absl::StatusOr<Word> NextWord(absl::string_view stops = "") {
    SkipBlanks();
    Word word;
    bool any = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (absl::ascii_isspace(static_cast<unsigned char>(c)) || absl::StrContains(stops, c)) break;
      if (c == '"' || c == '\'') {
        absl::Status quoted = c == '"' ? ReadDoubleQuoted(&word.text) : ReadSingleQuoted(&word.text);
        if (!quoted.ok()) return quoted;
        word.quoted = true;
      } else {
        word.text += c;
        ++pos_;
      }
      any = true;
    }
    if (!any) return absl::NotFoundError("no word");
    return word;
  }
  // What is left of the line, for messages.
  absl::string_view Rest() const { return text_.substr(std::min(pos_, text_.size())); }

 private:
  // At a '"': appends the decoded string and moves past the closing quote.
  absl::Status ReadDoubleQuoted(std::string* out) {
    const size_t open = pos_++;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\'':
        case '\\':
          *out += e;
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case '0':
          *out += '\0';
          break;
        case 'x': {
          int value = 0;
          if (pos_ + 2 > text_.size() || !absl::SimpleHexAtoi(text_.substr(pos_, 2), &value) ||
              !absl::ascii_isxdigit(static_cast<unsigned char>(text_[pos_])) ||
              !absl::ascii_isxdigit(static_cast<unsigned char>(text_[pos_ + 1]))) {
            return Invalid("\\x needs two hex digits");
          }
          *out += static_cast<char>(value);
          pos_ += 2;
          break;
        }
        default:
          return Invalid(absl::StrCat("unknown escape \\", std::string(1, e),
                                      " (use \\\" \\\\ \\n \\r \\t \\0 or \\xHH)"));
      }
    }
    return Invalid(absl::StrCat("unterminated string starting at ", text_.substr(open)));
  }
  // At a '\'': appends everything up to the next '\'' and moves past it.
  absl::Status ReadSingleQuoted(std::string* out) {
    const size_t close = text_.find('\'', pos_ + 1);
    if (close == absl::string_view::npos) {
      return Invalid(absl::StrCat("unterminated string starting at ", text_.substr(pos_)));
    }
    absl::StrAppend(out, text_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

std::optional<etcdserverpb::Compare::CompareTarget> ParseTarget(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "value" || n == "val" || n == "v") return etcdserverpb::Compare::VALUE;
  if (n == "mod" || n == "m") return etcdserverpb::Compare::MOD;
  if (n == "create" || n == "c") return etcdserverpb::Compare::CREATE;
  if (n == "version" || n == "ver") return etcdserverpb::Compare::VERSION;
  if (n == "lease") return etcdserverpb::Compare::LEASE;
  return std::nullopt;
}

absl::StatusOr<etcdserverpb::Compare::CompareResult> ParseOperator(LineScanner& scan) {
  // Two-character operators first, so that "!=" is not read as an unknown '!' and ">=" not as '>'.
  if (scan.Consume(">=") || scan.Consume("<=")) {
    return Invalid("etcd compares have no >= or <= (write > N-1 or < N+1)");
  }
  if (scan.Consume("!=")) return etcdserverpb::Compare::NOT_EQUAL;
  if (scan.Consume("==") || scan.Consume("=")) return etcdserverpb::Compare::EQUAL;
  if (scan.Consume("<")) return etcdserverpb::Compare::LESS;
  if (scan.Consume(">")) return etcdserverpb::Compare::GREATER;
  return Invalid(absl::StrCat("expected = != < or > after the key, not \"", scan.Rest(), "\""));
}

// Flags of operations that take a value ("--limit 5" or "--limit=5").
bool TakesValue(absl::string_view flag) { return flag == "--limit" || flag == "--rev"; }

// The words of an operation line split into the verb, flags (unquoted words starting with "--", with
// their value) and positional arguments, in order.
struct OperationWords {
  std::string verb;
  std::vector<std::pair<std::string, std::optional<std::string>>> flags;  // name, value if any
  std::vector<std::string> args;
};

absl::StatusOr<OperationWords> SplitOperation(absl::string_view text) {
  LineScanner scan(text);
  std::vector<Word> words;
  while (!scan.AtEnd()) {
    absl::StatusOr<Word> word = scan.NextWord();
    if (!word.ok()) return word.status();
    words.push_back(*std::move(word));
  }
  if (words.empty()) return Invalid("empty operation");
  OperationWords split;
  split.verb = absl::AsciiStrToLower(words[0].text);
  for (size_t i = 1; i < words.size(); ++i) {
    Word& w = words[i];
    if (w.quoted || !absl::StartsWith(w.text, "--") || w.text.size() <= 2) {
      split.args.push_back(std::move(w.text));
      continue;
    }
    const size_t eq = w.text.find('=');
    if (eq != std::string::npos) {
      split.flags.emplace_back(w.text.substr(0, eq), w.text.substr(eq + 1));
    } else if (TakesValue(w.text)) {
      if (i + 1 >= words.size()) return Invalid(absl::StrCat(w.text, " needs a value"));
      split.flags.emplace_back(w.text, std::move(words[++i].text));
    } else {
      split.flags.emplace_back(w.text, std::nullopt);
    }
  }
  return split;
}

// The value of flag `name` as a non-negative integer.
absl::StatusOr<int64_t> FlagInteger(const std::string& name, const std::string& text) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return Invalid(absl::StrCat(name, " needs a non-negative integer, not \"", text, "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<etcdserverpb::Compare> ParseCompare(absl::string_view text) {
  LineScanner scan(text);
  etcdserverpb::Compare compare;
  const std::string target_name = scan.Identifier();
  if (target_name.empty()) {
    return Invalid(absl::StrCat("expected a compare such as mod(\"k\") > 3, not \"", text, "\""));
  }
  const std::optional<etcdserverpb::Compare::CompareTarget> target = ParseTarget(target_name);
  if (!target.has_value()) {
    return Invalid(absl::StrCat("unknown compare target \"", target_name,
                                "\" (use value, mod, create, version or lease)"));
  }
  compare.set_target(*target);
  if (!scan.Consume("(")) return Invalid(absl::StrCat("expected '(' after ", target_name));
  absl::StatusOr<Word> key = scan.NextWord(")");
  if (!key.ok()) {
    return absl::IsNotFound(key.status()) ? Invalid(absl::StrCat(target_name, "() needs a key"))
                                          : key.status();
  }
  compare.set_key(key->text);
  if (!scan.Consume(")")) {
    return Invalid(absl::StrCat("expected ')' after the key, not \"", scan.Rest(), "\""));
  }
  const absl::StatusOr<etcdserverpb::Compare::CompareResult> result = ParseOperator(scan);
  if (!result.ok()) return result.status();
  compare.set_result(*result);
  absl::StatusOr<Word> operand = scan.NextWord();
  if (!operand.ok()) {
    return absl::IsNotFound(operand.status()) ? Invalid("the compare has no right-hand side")
                                              : operand.status();
  }
  if (!scan.AtEnd()) return Invalid(absl::StrCat("unexpected \"", scan.Rest(), "\" after the compare"));
  if (*target == etcdserverpb::Compare::VALUE) {
    compare.set_value(operand->text);
    return compare;
  }
  int64_t number = 0;
  if (operand->quoted || !absl::SimpleAtoi(operand->text, &number)) {
    return Invalid(absl::StrCat(target_name, "() compares with an integer, not \"", operand->text, "\""));
  }
  switch (*target) {
    case etcdserverpb::Compare::MOD:
      compare.set_mod_revision(number);
      break;
    case etcdserverpb::Compare::CREATE:
      compare.set_create_revision(number);
      break;
    case etcdserverpb::Compare::VERSION:
      compare.set_version(number);
      break;
    case etcdserverpb::Compare::LEASE:
      compare.set_lease(number);
      break;
    default:
      break;
  }
  return compare;
}

absl::StatusOr<etcdserverpb::RequestOp> ParseRequestOp(absl::string_view text) {
  absl::StatusOr<OperationWords> words = SplitOperation(text);
  if (!words.ok()) return words.status();
  const std::string& verb = words->verb;
  const auto& flags = words->flags;
  const auto& args = words->args;
  etcdserverpb::RequestOp op;
  if (verb == "put") {
    bool prev_kv = false;
    for (const auto& [name, value] : flags) {
      if (name == "--prev-kv" && !value.has_value()) {
        prev_kv = true;
      } else {
        return Invalid(absl::StrCat("put: unknown flag ", name, " (put takes --prev-kv)"));
      }
    }
    if (args.size() != 2) return Invalid("put takes a key and a value: put KEY VALUE");
    etcdserverpb::PutRequest* put = op.mutable_request_put();
    put->set_key(args[0]);
    put->set_value(args[1]);
    put->set_prev_kv(prev_kv);
    return op;
  }
  const bool is_get = verb == "get" || verb == "range";
  const bool is_del = verb == "del" || verb == "delete";
  if (!is_get && !is_del) {
    return Invalid(absl::StrCat("unknown operation \"", verb, "\" (use put, get or del)"));
  }
  KeySelection selection;
  bool prev_kv = false;
  bool keys_only = false;
  bool count_only = false;
  int64_t limit = 0;
  int64_t revision = 0;
  for (const auto& [name, value] : flags) {
    const bool bare = !value.has_value();
    if (name == "--prefix" && bare) {
      selection.prefix = true;
    } else if (name == "--from-key" && bare) {
      selection.from_key = true;
    } else if (is_del && name == "--prev-kv" && bare) {
      prev_kv = true;
    } else if (is_get && name == "--keys-only" && bare) {
      keys_only = true;
    } else if (is_get && name == "--count-only" && bare) {
      count_only = true;
    } else if (is_get && (name == "--limit" || name == "--rev")) {
      absl::StatusOr<int64_t> number = FlagInteger(name, *value);
      if (!number.ok()) return number.status();
      (name == "--limit" ? limit : revision) = *number;
    } else {
      return Invalid(absl::StrCat(verb, ": unknown flag ", name,
                                  is_get ? " (get takes --prefix, --from-key, --keys-only, --count-only, "
                                           "--limit N, --rev N)"
                                         : " (del takes --prefix, --from-key, --prev-kv)"));
    }
  }
  if (args.empty() || args.size() > 2) {
    return Invalid(absl::StrCat(verb, " takes a key and an optional range end: ", verb, " KEY [RANGE_END]"));
  }
  selection.key = args[0];
  if (args.size() == 2) selection.range_end = args[1];
  absl::StatusOr<KeyRange> range = ResolveKeyRange(selection);
  if (!range.ok()) return Invalid(absl::StrCat(verb, ": ", range.status().message()));
  if (is_get) {
    etcdserverpb::RangeRequest* get = op.mutable_request_range();
    get->set_key(range->key);
    get->set_range_end(range->range_end);
    get->set_keys_only(keys_only);
    get->set_count_only(count_only);
    get->set_limit(limit);
    get->set_revision(revision);
  } else {
    etcdserverpb::DeleteRangeRequest* del = op.mutable_request_delete_range();
    del->set_key(range->key);
    del->set_range_end(range->range_end);
    del->set_prev_kv(prev_kv);
  }
  return op;
}

absl::StatusOr<etcdserverpb::TxnRequest> ParseTxnArguments(const std::vector<std::string>& compares,
                                                           const std::vector<std::string>& success,
                                                           const std::vector<std::string>& failure) {
  etcdserverpb::TxnRequest txn;
  for (size_t i = 0; i < compares.size(); ++i) {
    absl::StatusOr<etcdserverpb::Compare> compare = ParseCompare(compares[i]);
    if (!compare.ok()) return Invalid(absl::StrCat("--if ", i + 1, ": ", compare.status().message()));
    *txn.add_compare() = *std::move(compare);
  }
  for (const auto& [flag, texts, ops] : {std::tuple("--then", &success, txn.mutable_success()),
                                         std::tuple("--else", &failure, txn.mutable_failure())}) {
    for (size_t i = 0; i < texts->size(); ++i) {
      absl::StatusOr<etcdserverpb::RequestOp> op = ParseRequestOp((*texts)[i]);
      if (!op.ok()) return Invalid(absl::StrCat(flag, " ", i + 1, ": ", op.status().message()));
      *ops->Add() = *std::move(op);
    }
  }
  return txn;
}

absl::StatusOr<etcdserverpb::TxnRequest> ParseTxnText(absl::string_view text) {
  etcdserverpb::TxnRequest txn;
  int section = 0;  // 0 compares, 1 success, 2 failure, 3 done
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    absl::ConsumeSuffix(&line, "\r");
    const absl::string_view content = absl::StripAsciiWhitespace(line);
    if (absl::StartsWith(content, "#")) continue;
    if (content.empty()) {
      if (section < 3) ++section;
      continue;
    }
    if (section == 3) {
      return Invalid(absl::StrCat("line ", line_number,
                                  ": text after the failure operations (a file holds three sections: "
                                  "compares, success operations, failure operations, each ended by a "
                                  "blank line)"));
    }
    if (section == 0) {
      absl::StatusOr<etcdserverpb::Compare> compare = ParseCompare(content);
      if (!compare.ok()) return Invalid(absl::StrCat("line ", line_number, ": ", compare.status().message()));
      *txn.add_compare() = *std::move(compare);
    } else {
      absl::StatusOr<etcdserverpb::RequestOp> op = ParseRequestOp(content);
      if (!op.ok()) return Invalid(absl::StrCat("line ", line_number, ": ", op.status().message()));
      *(section == 1 ? txn.add_success() : txn.add_failure()) = *std::move(op);
    }
  }
  return txn;
}

}  // namespace revkv::client
