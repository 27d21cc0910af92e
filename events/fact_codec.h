#pragma once
// The facts of an event in a compact binary form, for the views' rows (projection/rows.h): its
// business, mode, time and data, without the log's envelope (partition, seq, chain hashes), which
// the views keep in their keys or do not need. About a third of the log's JSON for a transfer,
// and decoded without parsing text.
//
// Form: a format byte, the type, live, time, business, then the data's members in the order
// their `fields()` lists them (events/described.h): unsigned integers as LEB128 varints, signed
// ones zigzag-encoded, strings and ids length-prefixed, an optional as a presence byte and its
// value, a list as its length and items, an enum as one byte. A format change changes kFormat,
// and the views' key layout with it (projection/view_keys.h). Pure; thread-safe.

#include <string>
#include <string_view>

#include "common/result.h"
#include "events/event.h"

namespace kobo {

// The fact form of `e` (its business, live, time and data).
std::string encode_fact(const Event& e);
void append_fact(std::string& out, const Event& e);
// An Event with business, live, time and data from `bytes`; an error when they are not a fact of
// this form (never a crash: the views are read as they are on disk).
[[nodiscard]] Result<Event> decode_fact(std::string_view bytes);
// The time of the fact in `bytes`, read from its head alone (a list's binary search by time).
[[nodiscard]] Result<UnixMs> fact_time(std::string_view bytes);

}  // namespace kobo
