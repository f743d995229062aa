// Rendering of aligned text tables.
#include "clients/cli/table.h"

#include <algorithm>

#include "clients/cli/text_format.h"

namespace revkv::client {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

Table& Table::AlignRight(size_t column) {
  if (right_.size() <= column) right_.resize(column + 1, false);
  right_[column] = true;
  return *this;
}

void Table::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

std::vector<size_t> Table::ColumnWidths() const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  return widths;
}

std::string Table::Render() const {
  const std::vector<size_t> widths = ColumnWidths();

  std::string out;
  auto render = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string empty;
      const std::string& cell = i < row.size() ? row[i] : empty;
      const size_t pad = widths[i] - DisplayWidth(cell);
      if (i > 0) line += "  ";
      const bool right = i < right_.size() && right_[i];
      if (right) line.append(pad, ' ');
      line += cell;
      if (!right) line.append(pad, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  };
  if (!header_.empty()) {
    render(header_);
    size_t total = 0;
    for (size_t w : widths) total += w;
    out += std::string(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-') + '\n';
  }
  for (const auto& row : rows_) render(row);
  return out;
}

std::string Table::RenderBoxed() const {
  const std::vector<size_t> widths = ColumnWidths();
  std::string rule = "+";
  for (size_t w : widths) rule += std::string(w + 2, '-') + "+";
  rule += '\n';
  auto render = [&](const std::vector<std::string>& row, bool header) {
    std::string line = "|";
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string empty;
      const std::string& cell = i < row.size() ? row[i] : empty;
      const size_t pad = widths[i] - DisplayWidth(cell);
      const bool right = i < right_.size() && right_[i];
      const size_t before = header ? pad / 2 : (right ? pad : 0);
      line += ' ' + std::string(before, ' ') + cell + std::string(pad - before, ' ') + " |";
    }
    return line + '\n';
  };
  std::string out = rule;
  if (!header_.empty()) out += render(header_, true) + rule;
  for (const auto& row : rows_) out += render(row, false);
  if (!rows_.empty()) out += rule;
  return out;
}

}  // namespace revkv::client
