// The event codec (events/event.h) on arbitrary bytes: decoding never crashes, whatever the
// input; and every input that decodes (hash unchecked) to a valid event round-trips: sealed
// again, it decodes with its hash checked to the same event, in canonical form, and its fact
// form (events/fact_codec.h) decodes to the same facts. The views' decoders (the fact form and
// projection/rows.h) meet the same bytes: whatever a views row holds, reading it never crashes.
// Pure functions: no service, so this target runs fast.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "events/event.h"
#include "events/fact_codec.h"
#include "projection/rows.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)kobo::check_schema_version(bytes);
  if (auto fact = kobo::decode_fact(bytes); fact.ok()) {
    auto again = kobo::decode_fact(kobo::encode_fact(fact.value()));
    require(again.ok() && again.value().data == fact.value().data &&
            again.value().business == fact.value().business && again.value().live == fact.value().live &&
            again.value().time == fact.value().time);
  }
  if (auto row = kobo::rows::decode_transaction(bytes); row.ok())
    require(kobo::rows::decode_transaction(kobo::rows::encode(row.value())).value() == row.value());
  if (auto row = kobo::rows::decode_wallet(bytes); row.ok())
    require(kobo::rows::decode_wallet(kobo::rows::encode(row.value())).value() == row.value());
  if (auto row = kobo::rows::decode_listed(bytes); row.ok())
    require(kobo::rows::decode_listed(kobo::rows::encode(row.value())).value() == row.value());
  if (auto row = kobo::rows::decode_key(bytes); row.ok())
    require(kobo::rows::decode_key(kobo::rows::encode(row.value())).value() == row.value());
  if (auto checked = kobo::decode_event(bytes); checked.ok()) require(kobo::validate(checked.value()).ok());
  auto decoded = kobo::decode_event_unverified(bytes);
  if (!decoded.ok() || !kobo::validate(decoded.value()).ok()) return 0;
  kobo::Event e = std::move(decoded).value();
  const std::string wire = kobo::seal(e);
  auto again = kobo::decode_event(wire);
  require(again.ok());
  require(kobo::in_canonical_form(again.value(), wire));
  require(kobo::encode_data(again.value().data) == kobo::encode_data(e.data));
  auto fact = kobo::decode_fact(kobo::encode_fact(e));
  require(fact.ok() && fact.value().data == e.data && fact.value().business == e.business);
  require(again.value().hash == e.hash && again.value().seq == e.seq &&
          again.value().business == e.business && again.value().time == e.time &&
          again.value().type() == e.type());
  return 0;
}
