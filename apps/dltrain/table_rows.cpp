// read_table_rows: the commands' --table (table_rows.h), tokenized by lib/data/table.h's parse_csv.
#include "table_rows.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/table.h"
#include "util/error.h"

namespace dlt::app {

namespace fs = std::filesystem;

std::string trim_cell(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

std::string table_where(const TableRows& table, const TableRow& row) {
  return table.path + ":" + std::to_string(row.line);
}

TableRows read_table_rows(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw DataError(path + ": no such table file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(path + ": cannot read the table");
  const std::vector<CsvRecord> rows = parse_csv(ss.str(), path);  // lib/data/table.h's tokenizer

  TableRows t;
  t.path = path;
  if (rows.empty()) throw DataError(path + ": the table is empty (expected a header row, then one row per image)");
  t.header = rows.front().fields;
  for (auto& h : t.header) h = trim_cell(h);
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].fields.size() != t.header.size())
      throw DataError(path + ":" + std::to_string(rows[r].line) + ": " + std::to_string(rows[r].fields.size()) +
                      " cells but the header has " + std::to_string(t.header.size()));
    t.rows.push_back(TableRow{static_cast<int>(rows[r].line), rows[r].fields});
  }
  if (t.rows.empty()) throw DataError(path + ": the table has a header but no rows");
  return t;
}

std::string table_image(const TableRows& table, const TableRow& row, const std::string& folder) {
  const std::string& cell = row.cells.at(0);
  if (cell.empty()) throw DataError(table_where(table, row) + ": the image file cell is empty");
  fs::path p(cell);
  if (p.is_relative()) p = (folder.empty() ? fs::path(table.path).parent_path() : fs::path(folder)) / p;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    throw DataError(table_where(table, row) + ": image " + p.string() + " not found" +
                    (folder.empty() ? " (relative paths start from the table's folder)"
                                    : " (relative paths start from " + folder + ")"));
  return p.string();
}

}  // namespace dlt::app
