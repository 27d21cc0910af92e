// The event codec (events/event.h) on arbitrary bytes: decoding never crashes, whatever the
// input; and every input that decodes (hash unchecked) to a valid event round-trips: sealed
// again, it decodes with its hash checked to the same event, in canonical form.
// Pure functions: no service, so this target runs fast.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "events/event.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)kobo::check_schema_version(bytes);
  if (auto checked = kobo::decode_event(bytes); checked.ok()) require(kobo::validate(checked.value()).ok());
  auto decoded = kobo::decode_event_unverified(bytes);
  if (!decoded.ok() || !kobo::validate(decoded.value()).ok()) return 0;
  kobo::Event e = std::move(decoded).value();
  const std::string wire = kobo::seal(e);
  auto again = kobo::decode_event(wire);
  require(again.ok());
  require(kobo::in_canonical_form(again.value(), wire));
  require(kobo::encode_data(again.value().data) == kobo::encode_data(e.data));
  require(again.value().hash == e.hash && again.value().seq == e.seq &&
          again.value().business == e.business && again.value().time == e.time &&
          again.value().type() == e.type());
  return 0;
}
