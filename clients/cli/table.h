// A plain-text table with aligned columns, for revkv's text output.
#ifndef REVKV_CLIENTS_CLI_TABLE_H_
#define REVKV_CLIENTS_CLI_TABLE_H_

#include <string>
#include <vector>

namespace revkv::client {

// Rows of cells rendered with each column as wide as its widest cell, columns two spaces apart, no
// trailing blanks. Owner thread only.
class Table {
 public:
  // `header` is the first row; an empty header means none.
  explicit Table(std::vector<std::string> header = {});

  // Right-aligns column `column` (numbers read better that way). Returns *this.
  Table& AlignRight(size_t column);

  // Appends a row; a row shorter than the others is padded with empty cells.
  void AddRow(std::vector<std::string> cells);

  // The table as lines ending in '\n'; a header row is followed by a rule of dashes.
  std::string Render() const;

  // The table in boxes, as `etcdctl -w table` draws them: `+---+` rules above and below the header and
  // below the last row, cells between `| ` and ` |`, the header centred (left of centre when the space
  // is odd).
  std::string RenderBoxed() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;  // indexed by column

  std::vector<size_t> ColumnWidths() const;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_TABLE_H_
