// CSV tables of images and their targets (data.train / data.validation ending in .csv):
// regression (File,<response>,<response>...: numbers) and multi-label classification
// (File,Labels: labels separated by ';'). Reads and checks the whole table up front, so that
// every problem is one line naming file:line. Deliberately not here: decoding the images.
//
// Format: UTF-8 (a leading byte-order mark is ignored), comma separated, CRLF or LF line ends,
// fields may be double-quoted (RFC 4180: a quoted field may hold commas, line breaks and ""
// for a quote). Spaces around unquoted fields are trimmed; blank lines are skipped. The first
// row is the header; the first column holds image files, relative to the CSV's folder or
// absolute.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/datastore.h"

namespace dlt {

// One CSV record: its fields and the line it starts on (1-based).
struct CsvRecord {
  int64_t line = 0;
  std::vector<std::string> fields;
};
// Splits `text` into records (blank lines left out). `name` prefixes errors: a quoted field
// that is never closed, text after a closing quote, a quote inside an unquoted field
// (DataError "name:line: ...").
std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& name);

struct ImageTable {
  TargetKind kind = TargetKind::kResponses;  // kResponses or kMultiLabel
  std::vector<std::string> files;            // (rows) image paths, resolved against the CSV's folder
  std::vector<std::string> response_names;   // regression: the header's names after the first
  std::vector<std::string> classes;          // multi-label: what each 0/1 column stands for
  int64_t width = 0;                         // responses R, or classes C
  std::vector<float> targets;                // (rows, width)
};

// Reads `csv`. A table whose header has exactly two columns, the second named Labels (any
// case), is multi-label; any other is regression. Multi-label classes: `*classes` when given
// (a label not in it is an error; `classes_source` names the list in that message, e.g. "the
// training classes" or "data.ClassNames"), else the sorted union of the labels. Throws
// DataError naming file:line for: a missing or unreadable table, an empty table or one with
// no rows, a header with fewer than two columns, an unnamed or duplicate column, a row with
// too few or too many fields, an empty or missing image file, a response that is not a
// finite number, an unknown label, and a multi-label table without any label.
ImageTable read_image_table(const std::string& csv, const std::vector<std::string>* classes = nullptr,
                            const std::string& classes_source = "the training classes");

}  // namespace dlt
