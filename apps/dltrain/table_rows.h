// The --table CSV of `dltrain predict` and `dltrain classify` (docs/matlab.md, "Regression and
// multi-label"): a header row, then one row per image, the image file first. The CSV is split by
// lib/data/table.h's parse_csv (the tokenizer training's tables use); here only the cells and
// their lines, as the commands match columns by the model's names and check their meaning.
#pragma once
#include <string>
#include <vector>

namespace dlt::app {

struct TableRow {
  int line = 0;  // the file's line the row starts on (1: the header)
  std::vector<std::string> cells;
};

struct TableRows {
  std::string path;
  std::vector<std::string> header;  // cells trimmed of spaces
  std::vector<TableRow> rows;       // blank lines left out
};

// Reads a UTF-8 CSV (parse_csv's format). Throws DataError "path:line: ..." for a missing or
// empty file, a malformed quote, or a row whose cell count is not the header's.
TableRows read_table_rows(const std::string& path);

// A row's image file: absolute as given, else relative to `folder` when not empty, else to the
// table's folder. Throws DataError "path:line: ..." when the file does not exist.
std::string table_image(const TableRows& table, const TableRow& row, const std::string& folder);

// "path:line"
std::string table_where(const TableRows& table, const TableRow& row);

// Spaces and tabs trimmed from both ends.
std::string trim_cell(const std::string& s);

}  // namespace dlt::app
