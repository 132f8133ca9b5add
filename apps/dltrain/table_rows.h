// The --table CSV of `dltrain predict` and `dltrain classify` (docs/matlab.md, "Regression and
// multi-label"): a header row, then one row per image, the image file first. A small reader of
// its own until the commands take lib/data/table.h's (ImageDatastore::from_table), which reads
// the same format for training; only the cells are read here, the commands check their meaning.
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

// Reads a UTF-8 CSV (comma separated, RFC 4180 double quotes, CRLF or LF, a byte-order mark
// allowed). Throws DataError "path:line: ..." for a missing or empty file, an unterminated
// quote, or a row whose cell count is not the header's.
TableRows read_table_rows(const std::string& path);

// A row's image file: absolute as given, else relative to `folder` when not empty, else to the
// table's folder. Throws DataError "path:line: ..." when the file does not exist.
std::string table_image(const TableRows& table, const TableRow& row, const std::string& folder);

// "path:line"
std::string table_where(const TableRows& table, const TableRow& row);

// Spaces and tabs trimmed from both ends.
std::string trim_cell(const std::string& s);

}  // namespace dlt::app
