// read_table_rows: a CSV reader for the commands' --table (table_rows.h).
#include "table_rows.h"

#include <filesystem>
#include <fstream>
#include <sstream>

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
  std::string text = ss.str();
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);

  TableRows t;
  t.path = path;
  std::vector<TableRow> rows;
  TableRow row;
  std::string cell;
  bool quoted = false, was_quoted = false;
  int line = 1;
  row.line = 1;
  auto end_cell = [&] {
    row.cells.push_back(was_quoted ? cell : trim_cell(cell));
    cell.clear();
    was_quoted = false;
  };
  auto end_row = [&] {
    end_cell();
    const bool blank = row.cells.size() == 1 && row.cells[0].empty();
    if (!blank) rows.push_back(row);
    row.cells.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
    } else if (c == '"' && trim_cell(cell).empty()) {
      cell.clear();
      quoted = was_quoted = true;
    } else if (c == ',') {
      end_cell();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
      row.line = ++line;
    } else {
      cell += c;
    }
  }
  if (quoted) throw DataError(path + ":" + std::to_string(row.line) + ": a quoted cell has no closing quote");
  if (!cell.empty() || !row.cells.empty() || was_quoted) end_row();
  if (rows.empty()) throw DataError(path + ": the table is empty (expected a header row, then one row per image)");
  t.header = rows.front().cells;
  for (auto& h : t.header) h = trim_cell(h);
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].cells.size() != t.header.size())
      throw DataError(path + ":" + std::to_string(rows[r].line) + ": " + std::to_string(rows[r].cells.size()) +
                      " cells but the header has " + std::to_string(t.header.size()));
    t.rows.push_back(std::move(rows[r]));
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
