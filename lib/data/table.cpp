// The CSV tokenizer (a small RFC 4180 state machine that counts lines) and the image table
// built on it: header checks, per-row field counts, image files, responses and labels.
#include "data/table.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {
namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {  // spaces, tabs and (in a quoted Labels cell) line breaks
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string where(const std::string& name, int64_t line) { return name + ":" + std::to_string(line) + ": "; }

std::vector<std::string> split_labels(const std::string& cell) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= cell.size()) {
    size_t end = cell.find(';', start);
    if (end == std::string::npos) end = cell.size();
    std::string label = trim(cell.substr(start, end - start));
    if (!label.empty() && std::find(out.begin(), out.end(), label) == out.end()) out.push_back(label);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& name) {
  std::vector<CsvRecord> records;
  size_t i = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;  // UTF-8 byte-order mark
  int64_t line = 1;
  CsvRecord rec;
  rec.line = line;
  std::string field;
  bool quoted = false;       // the current field started with a quote
  bool after_quote = false;  // its closing quote has been read
  auto end_field = [&] {
    rec.fields.push_back(quoted ? field : trim(field));
    field.clear();
    quoted = after_quote = false;
  };
  auto end_record = [&] {
    end_field();
    const bool blank = rec.fields.size() == 1 && rec.fields[0].empty();
    if (!blank) records.push_back(std::move(rec));
    rec = CsvRecord{};
  };
  const size_t n = text.size();
  while (i < n) {
    const char ch = text[i];
    if (quoted && !after_quote) {  // inside quotes: everything but "" and the closing quote is text
      if (ch == '"') {
        if (i + 1 < n && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        after_quote = true;
      } else {
        if (ch == '\n') ++line;
        field += ch;
      }
      ++i;
      continue;
    }
    if (ch == ',') {
      end_field();
    } else if (ch == '\n' || ch == '\r') {
      end_record();
      if (ch == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
      rec.line = ++line;
    } else if (after_quote) {
      if (ch != ' ' && ch != '\t')
        throw DataError(where(name, line) +
                        "text after a closing quote (a quoted field ends at its quote; write \"\" "
                        "for a quote inside it)");
    } else if (ch == '"') {
      if (!trim(field).empty())
        throw DataError(where(name, line) +
                        "a quote inside an unquoted field (quote the whole field and write \"\" for the quote)");
      field.clear();
      quoted = true;
    } else {
      field += ch;
    }
    ++i;
  }
  if (quoted && !after_quote)
    throw DataError(where(name, rec.line) + "a quoted field is never closed (add the closing \")");
  if (!field.empty() || !rec.fields.empty() || quoted) end_record();
  return records;
}

ImageTable read_image_table(const std::string& csv, const std::vector<std::string>* classes,
                            const std::string& classes_source) {
  std::error_code ec;
  if (!fs::exists(csv, ec)) throw DataError(csv + ": table does not exist (check the data path)");
  if (fs::is_directory(csv, ec)) throw DataError(csv + ": is a folder, not a table (give the .csv file)");
  std::ifstream in(csv, std::ios::binary);
  if (!in) throw DataError(csv + ": cannot read the table: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::vector<CsvRecord> records = parse_csv(ss.str(), csv);
  if (records.empty())
    throw DataError(csv +
                    ": empty table (write a header row such as File,Angle or File,Labels, then one row per image)");
  const CsvRecord& header = records[0];
  const size_t columns = header.fields.size();
  const std::string header_line = where(csv, header.line);
  if (columns < 2)
    throw DataError(header_line +
                    "the header has 1 column; a table needs the image file column and then responses "
                    "(File,Angle) or a Labels column (File,Labels)");
  std::map<std::string, size_t> seen;
  for (size_t c = 0; c < columns; ++c) {
    const std::string& h = header.fields[c];
    if (h.empty())
      throw DataError(header_line + "column " + std::to_string(c + 1) + " has no name (name every column)");
    auto [it, fresh] = seen.emplace(h, c);
    if (!fresh)
      throw DataError(header_line + "column name '" + h + "' appears twice (columns " + std::to_string(it->second + 1) +
                      " and " + std::to_string(c + 1) + "; give each column its own name)");
  }
  if (records.size() == 1)
    throw DataError(header_line + "the table has a header but no rows (add one row per image below it)");

  ImageTable t;
  t.kind = columns == 2 && iequals(header.fields[1], "Labels") ? TargetKind::kMultiLabel : TargetKind::kResponses;
  if (t.kind == TargetKind::kResponses) {
    t.response_names.assign(header.fields.begin() + 1, header.fields.end());
    t.width = static_cast<int64_t>(columns - 1);
  }
  const fs::path folder = fs::path(csv).parent_path();
  std::vector<std::vector<std::string>> labels;  // multi-label: per row
  for (size_t r = 1; r < records.size(); ++r) {
    const CsvRecord& rec = records[r];
    const std::string at = where(csv, rec.line);
    if (rec.fields.size() != columns)
      throw DataError(at + std::to_string(rec.fields.size()) + " field" + (rec.fields.size() == 1 ? "" : "s") +
                      " but the header has " + std::to_string(columns) + " (" + join(header.fields, ",") +
                      "); quote a field that holds a comma");
    const std::string& file = rec.fields[0];
    if (file.empty()) throw DataError(at + "no image file in the first column");
    const fs::path p = fs::path(file).is_absolute() ? fs::path(file) : folder / file;
    if (!fs::exists(p, ec))
      throw DataError(at + "image file '" + file + "' does not exist (looked for " + p.string() +
                      "; paths are relative to the table's folder)");
    t.files.push_back(p.string());
    if (t.kind == TargetKind::kResponses) {
      for (size_t c = 1; c < columns; ++c) {
        double v;
        if (!parse_double(rec.fields[c], &v) || !std::isfinite(static_cast<float>(v)))
          throw DataError(at + header.fields[c] + " is '" + rec.fields[c] +
                          "', not a finite number (every response must be a number)");
        t.targets.push_back(static_cast<float>(v));
      }
    } else {
      labels.push_back(split_labels(rec.fields[1]));
    }
  }
  if (t.kind == TargetKind::kResponses) return t;

  if (classes) {
    t.classes = *classes;
  } else {
    std::set<std::string> all;
    for (const auto& row : labels) all.insert(row.begin(), row.end());
    t.classes.assign(all.begin(), all.end());
    if (t.classes.empty())
      throw DataError(csv + ": no row has a label (write each image's labels in the Labels column, separated by ';')");
  }
  t.width = static_cast<int64_t>(t.classes.size());
  t.targets.assign(labels.size() * t.classes.size(), 0.0f);
  for (size_t r = 0; r < labels.size(); ++r) {
    for (const std::string& l : labels[r]) {
      auto it = std::find(t.classes.begin(), t.classes.end(), l);
      if (it == t.classes.end())
        throw DataError(where(csv, records[r + 1].line) + "label '" + l + "' is not one of " + classes_source + " (" +
                        join(t.classes, ", ") + ")" + did_you_mean(l, t.classes));
      t.targets[r * t.classes.size() + size_t(it - t.classes.begin())] = 1.0f;
    }
  }
  return t;
}

}  // namespace dlt
