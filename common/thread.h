#pragma once
// The calling thread's name (what top -H, perf and /proc show) and its scheduling priority, and
// how many cores the process may run on.

#include <string_view>

#include "common/result.h"

namespace kobo {

// Names the calling thread (at most 15 bytes are kept, as Linux keeps).
void name_this_thread(std::string_view name);

// Sets the calling thread's nice value (-20 highest priority, 19 lowest). A value below the
// process's own needs CAP_SYS_NICE or RLIMIT_NICE: without it the error names that.
[[nodiscard]] Status set_this_thread_nice(int nice);

// The cores the process may run on (its CPU affinity, as taskset and containers set it), at
// least 1.
unsigned cores_available();

}  // namespace kobo
