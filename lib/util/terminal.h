// The width of the terminal a stream writes to, for output that must not wrap (the progress
// bar, the verbose table, the confusion matrix). No colours, no cursor control beyond '\r'.
#pragma once
#include <cstdio>

namespace dlt {

// Columns of the terminal behind `stream`: TIOCGWINSZ on its descriptor when it is a
// terminal, else the COLUMNS environment variable (a positive integer), else 80.
int terminal_columns(FILE* stream);

// Whether `stream` is a terminal.
bool is_terminal(FILE* stream);

}  // namespace dlt
