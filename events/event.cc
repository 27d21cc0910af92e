#include "events/event.h"

#include <simdjson.h>
#include <algorithm>
#include <array>
#include <charconv>
#include <type_traits>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "events/described.h"
#include "events/name_table.h"

namespace kobo {
namespace {

constexpr NameTable<EventType, 30> kTypeNames{{
    {EventType::writer_started, "WriterStarted"},
    {EventType::business_registered, "BusinessRegistered"},
    {EventType::account_updated, "AccountUpdated"},
    {EventType::wallet_opened, "WalletOpened"},
    {EventType::transit_wallet_opened, "TransitWalletOpened"},
    {EventType::collection_wallet_opened, "CollectionWalletOpened"},
    {EventType::collection_wallet_expired, "CollectionWalletExpired"},
    {EventType::beneficiary_saved, "BeneficiarySaved"},
    {EventType::wallet_transfer_settled, "WalletTransferSettled"},
    {EventType::bank_transfer_initiated, "BankTransferInitiated"},
    {EventType::payout_processing, "PayoutProcessing"},
    {EventType::payout_succeeded, "PayoutSucceeded"},
    {EventType::payout_failed, "PayoutFailed"},
    {EventType::incoming_credit_received, "IncomingCreditReceived"},
    {EventType::wallet_tier_changed, "WalletTierChanged"},
    {EventType::hold_placed, "HoldPlaced"},
    {EventType::hold_captured, "HoldCaptured"},
    {EventType::hold_voided, "HoldVoided"},
    {EventType::hold_expired, "HoldExpired"},
    {EventType::webhook_secret_rotated, "WebhookSecretRotated"},
    {EventType::bulk_transfer_accepted, "BulkTransferAccepted"},
    {EventType::webhook_deliveries_ended, "WebhookDeliveriesEnded"},
    {EventType::signing_key_sealed, "SigningKeySealed"},
    {EventType::secret_key_rolled, "SecretKeyRolled"},
    {EventType::secret_key_revoked, "SecretKeyRevoked"},
    {EventType::business_suspended, "BusinessSuspended"},
    {EventType::business_resumed, "BusinessResumed"},
    {EventType::webhooks_configured, "WebhooksConfigured"},
    {EventType::chain_checkpointed, "ChainCheckpointed"},
    {EventType::business_rate_limits_set, "BusinessRateLimitsSet"},
}};
static_assert(std::variant_size_v<EventData> == kTypeNames.size(), "every event type has a name");

constexpr NameTable<TransactionStatus, 4> kTransactionStatusNames{
    {{TransactionStatus::pending, "pending"},
     {TransactionStatus::processing, "processing"},
     {TransactionStatus::success, "success"},
     {TransactionStatus::failed, "failed"}}};
constexpr NameTable<CollectionStatus, 3> kCollectionStatusNames{{{CollectionStatus::pending, "pending"},
                                                                 {CollectionStatus::success, "success"},
                                                                 {CollectionStatus::expired, "expired"}}};
constexpr NameTable<HoldStatus, 4> kHoldStatusNames{{{HoldStatus::pending, "pending"},
                                                     {HoldStatus::captured, "captured"},
                                                     {HoldStatus::voided, "voided"},
                                                     {HoldStatus::expired, "expired"}}};
constexpr NameTable<WalletCategory, 2> kCategoryNames{
    {{WalletCategory::primary, "primary"}, {WalletCategory::secondary, "secondary"}}};
constexpr NameTable<BeneficiaryType, 3> kBeneficiaryTypeNames{{{BeneficiaryType::vba, "vba"},
                                                               {BeneficiaryType::external, "external"},
                                                               {BeneficiaryType::personal, "personal"}}};

// ---- encoding: canonical JSON written member by member, no DOM --------------------------------
// With the one JSON writer (common/json_writer.h): members in the order fields() names them,
// which is key order, so the text is canonical without sorting.

using described::Described;
using described::IsId;
using described::IsOptional;

template <typename T>
void write(JsonWriter& w, const T& v);

template <Described T>
void write_object(JsonWriter& w, const T& x) {
  w.begin_object();
  std::string_view previous;
  T::fields(x, [&](const char* name, const auto& member) {
    // The canonical form's keys are sorted: fields() must list them so.
    KOBO_ASSERT(previous < std::string_view(name), "fields() lists an event's members in key order");
    previous = name;
    if constexpr (IsOptional<std::decay_t<decltype(member)>>::value) {
      if (!member) return;
    }
    w.key(name);
    write(w, member);
  });
  w.end_object();
}

template <typename T>
void write(JsonWriter& w, const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    w.string(v);
  else if constexpr (std::is_same_v<T, bool>)
    w.boolean(v);
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    w.number(v);
  else if constexpr (std::is_same_v<T, Kobo> || std::is_same_v<T, Epoch>)
    w.number(v.value);
  else if constexpr (std::is_same_v<T, Timestamp>) {
    const std::string text = format_iso8601(v.ms);
    // The decoder refuses a time whose text is not the one it reads back as.
    KOBO_ASSERT(parse_iso8601(text) == v.ms, "a time in an event's data reads back as itself");
    w.string(text);
  } else if constexpr (std::is_same_v<T, RawJson>) {
    // The decoder reads it back only as an object.
    KOBO_ASSERT(v.text.size() >= 2 && v.text.front() == '{' && v.text.back() == '}', "raw JSON is an object");
    w.raw(v.text);
  } else if constexpr (std::is_enum_v<T>)
    w.string(to_string(v));
  else if constexpr (IsOptional<T>::value)
    write(w, *v);
  else if constexpr (IsId<T>::value)
    w.string(v.value);
  else if constexpr (Described<T>)
    write_object(w, v);
  else {
    w.begin_array();
    for (const auto& item : v) write(w, item);
    w.end_array();
  }
}

// The canonical JSON of `e` without its hash: the envelope's members in key order.
std::string canonical_without_hash(const Event& e) {
  KOBO_ASSERT(e.command_size >= 1 && e.command_seq <= e.seq, "an event is one of its command's");
  std::string out;
  out.reserve(640);
  JsonWriter w(out);
  w.begin_object();
  if (!e.actor.empty()) w.member("actor", e.actor);
  w.member("business", e.business);
  if (e.command_size != 1)
    w.member("commandSeq", e.command_seq.value).member("commandSize", std::uint64_t{e.command_size});
  w.key("data");
  std::visit([&](const auto& d) { write_object(w, d); }, e.data);
  w.member("epoch", e.epoch.value)
      .member("live", e.live)
      .member("partition", std::uint64_t{e.partition.value})
      .member("prevHash", e.prev_hash)
      .member("schemaVersion", static_cast<std::int64_t>(e.schema_version))
      .member("seq", e.seq.value)
      .member("time", format_iso8601(e.time))
      .member("type", to_string(e.type()))
      .end_object();
  KOBO_ASSERT(w.done(), "an event's canonical JSON is one whole object");
  return out;
}

// Checked several times per event decoded, so without a branch per digit (it vectorizes).
bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  unsigned bad = 0;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    bad |= static_cast<unsigned>(static_cast<unsigned char>(u - '0') > 9 &&
                                 static_cast<unsigned char>(u - 'a') > 5);
  }
  return bad == 0;
}

// The wire form is `{"hash":"<64 hex>",` followed by the canonical JSON without its hash, less
// its opening brace (seal()). So the hash is checked over the record's own bytes, with no
// re-encoding: any edited byte fails it, and the bytes it covers are the bytes just decoded.
// Whether those bytes are also in canonical form is in_canonical_form()'s question.
constexpr std::string_view kWireHashPrefix = "{\"hash\":\"";

// What follows `{"hash":"<hash>",` in `bytes`, or nullopt when they do not start so.
std::optional<std::string_view> wire_body(std::string_view bytes, const std::string& hash) {
  KOBO_ASSERT(is_hex64(hash), "the hash of a decoded or sealed event is 64 hex digits");
  const std::size_t body_at = kWireHashPrefix.size() + hash.size() + 2;
  if (bytes.size() <= body_at || !bytes.starts_with(kWireHashPrefix) ||
      bytes.substr(kWireHashPrefix.size(), hash.size()) != hash || bytes.substr(body_at - 2, 2) != "\",")
    return std::nullopt;
  KOBO_ASSERT(body_at == 75 && body_at < bytes.size(), "the body follows the 75 bytes of the hash member");
  return bytes.substr(body_at);
}

bool hash_covers_bytes(std::string_view bytes, const Event& e) {
  KOBO_ASSERT(is_hex64(e.prev_hash), "the decoder checks prevHash before the hash");
  const auto body = wire_body(bytes, e.hash);
  return body && to_hex(sha256({e.prev_hash, "{", *body})) == e.hash;
}

// ---- decoding: simdjson On Demand, straight into the structs ----------------------------------

namespace od = simdjson::ondemand;

Status malformed(std::string_view what) {
  KOBO_ASSERT(!what.empty(), "a refusal names what is malformed");
  return Status::error("malformed event: " + std::string(what));
}

template <typename T>
Status read(od::value v, T& out, const char* name);

template <Described T>
Status read_object(od::value v, T& out) {
  od::object object;
  if (v.get_object().get(object) != simdjson::SUCCESS) return malformed("expected an object");
  std::uint64_t seen = 0;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return malformed("bad member name");
    bool matched = false;
    Status status;
    int i = 0;
    T::fields(out, [&](const char* name, auto& member) {
      if (!matched && key == name) {
        matched = true;
        if (seen & (std::uint64_t{1} << i))
          status = malformed(std::string("repeated member ") + name);
        else
          status = read(field.value(), member, name);
        seen |= std::uint64_t{1} << i;
      }
      ++i;
    });
    if (!matched) return malformed("unknown member " + std::string(key));
    if (!status) return status;
  }
  Status missing;
  int i = 0;
  T::fields(out, [&](const char* name, auto& member) {
    if constexpr (!IsOptional<std::decay_t<decltype(member)>>::value) {
      if (missing && !(seen & (std::uint64_t{1} << i)))
        missing = malformed(std::string("missing member ") + name);
    }
    ++i;
  });
  KOBO_ASSERT(i <= 64, "a struct's members fit the 64 bits that track which were seen");
  KOBO_ASSERT(i == 64 || (seen >> i) == 0, "only a struct's own members are marked seen");
  return missing;
}

template <typename E>
Status read_enum(od::value v, E& out, const char* name, std::optional<E> (*parse)(std::string_view)) {
  std::string_view text;
  if (v.get_string().get(text) != simdjson::SUCCESS) return malformed(std::string(name) + " is not a string");
  const auto parsed = parse(text);
  if (!parsed) return malformed(std::string(name) + " has an unknown value " + std::string(text));
  out = *parsed;
  KOBO_ASSERT(to_string(out) == text, "an enum's name reads back as itself");
  return {};
}

template <typename T>
Status read(od::value v, T& out, const char* name) {
  const auto bad = [&](const char* what) { return malformed(std::string(name) + " is not " + what); };
  if constexpr (std::is_same_v<T, std::string>) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return bad("a string");
    out.assign(s);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.get_bool().get(out) != simdjson::SUCCESS) return bad("a boolean");
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    if (v.get_uint64().get(out) != simdjson::SUCCESS) return bad("a non-negative integer");
  } else if constexpr (std::is_same_v<T, Kobo>) {
    if (v.get_int64().get(out.value) != simdjson::SUCCESS) return bad("an integer");
  } else if constexpr (std::is_same_v<T, Epoch>) {
    if (v.get_uint64().get(out.value) != simdjson::SUCCESS) return bad("a non-negative integer");
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return bad("a time");
    const auto t = parse_iso8601(s);
    if (!t || format_iso8601(*t) != s) return bad("a time");
    out.ms = *t;
  } else if constexpr (std::is_same_v<T, RawJson>) {
    od::object object;
    std::string_view raw;
    if (v.get_object().get(object) != simdjson::SUCCESS || object.raw_json().get(raw) != simdjson::SUCCESS)
      return bad("an object");
    // simdjson's raw text of an object runs on over the white space after it.
    const auto last = raw.find_last_not_of(" \t\n\r");
    if (last == std::string_view::npos || raw.front() != '{' || raw[last] != '}') return bad("an object");
    out.text.assign(raw.substr(0, last + 1));
    KOBO_ASSERT(out.text.size() >= 2 && out.text.front() == '{' && out.text.back() == '}',
                "raw JSON read is an object's text, as the encoder writes it");
  } else if constexpr (std::is_same_v<T, TransactionStatus>) {
    return read_enum<T>(v, out, name, transaction_status_from_string);
  } else if constexpr (std::is_same_v<T, WalletCategory>) {
    return read_enum<T>(v, out, name, wallet_category_from_string);
  } else if constexpr (std::is_same_v<T, BeneficiaryType>) {
    return read_enum<T>(v, out, name, beneficiary_type_from_string);
  } else if constexpr (IsOptional<T>::value) {
    return read(v, out.emplace(), name);
  } else if constexpr (IsId<T>::value) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return bad("a string");
    out.value.assign(s);
  } else if constexpr (Described<T>) {
    return read_object(v, out);
  } else {
    od::array array;
    if (v.get_array().get(array) != simdjson::SUCCESS) return bad("an array");
    for (auto item : array) {
      od::value element;
      if (item.get(element) != simdjson::SUCCESS) return bad("an array");
      [[maybe_unused]] const std::size_t had = out.size();
      if (auto s = read(element, out.emplace_back(), name); !s) return s;
      KOBO_ASSERT(out.size() == had + 1, "an array's item is read into one element");
    }
  }
  return {};
}

// The data of an event of type `type`, from its JSON text (which has padding readable after it).
Status read_data(od::parser& parser, EventType type, std::string_view text, std::size_t capacity,
                 EventData& out) {
  KOBO_ASSERT(static_cast<std::size_t>(type) < std::variant_size_v<EventData>, "a known event type");
  KOBO_ASSERT(capacity >= text.size() + simdjson::SIMDJSON_PADDING,
              "the data has simdjson's padding after it");
  od::document doc;
  if (parser.iterate(text.data(), text.size(), capacity).get(doc) != simdjson::SUCCESS)
    return malformed("data");
  od::value root;
  if (doc.get_value().get(root) != simdjson::SUCCESS) return malformed("data");
  Status status;
  // The alternative with the index of `type`.
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((static_cast<std::size_t>(type) == I ? (void)(status = read_object(root, out.emplace<I>())) : (void)0),
     ...);
  }
  (std::make_index_sequence<std::variant_size_v<EventData>>{});
  if (!status) return status;
  KOBO_ASSERT(out.index() == static_cast<std::size_t>(type), "the data read is of the type named");
  return {};
}

// The envelope's optional `actor` among the members decode() has seen.
constexpr std::uint64_t kActorBit = 8192;

Result<Event> decode(std::string_view bytes, bool verify) {
  thread_local od::parser parser;
  thread_local std::string padded;
  padded.assign(bytes);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');

  Event e;
  std::string_view data_text;  // points into `padded`
  std::string type_name, time_text;
  std::uint64_t seen = 0;
  {
    od::document doc;
    od::object object;
    if (parser.iterate(padded.data(), bytes.size(), padded.size()).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(object) != simdjson::SUCCESS)
      return Status::error("event is not a JSON object");
    for (auto field : object) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) return malformed("bad member name");
      od::value v;
      if (field.value().get(v) != simdjson::SUCCESS) return malformed("bad value");
      Status s;
      std::uint64_t bit = 0;
      std::uint64_t number = 0;
      if (key == "hash") {
        bit = 1, s = read(v, e.hash, "hash");
      } else if (key == "actor") {
        bit = kActorBit, s = read(v, e.actor, "actor");
        if (s && e.actor.empty()) s = malformed("actor is empty (it is absent when nobody caused the event)");
      } else if (key == "business") {
        bit = 2, s = read(v, e.business, "business");
      } else if (key == "commandSeq") {
        bit = 4, s = read(v, e.command_seq.value, "commandSeq");
      } else if (key == "commandSize") {
        bit = 8, s = read(v, number, "commandSize");
        if (s && number > UINT32_MAX) s = malformed("commandSize");
        e.command_size = static_cast<std::uint32_t>(number);
      } else if (key == "data") {
        bit = 16;
        od::object d;
        if (v.get_object().get(d) != simdjson::SUCCESS || d.raw_json().get(data_text) != simdjson::SUCCESS)
          s = malformed("data is not an object");
      } else if (key == "epoch") {
        bit = 32, s = read(v, e.epoch, "epoch");
      } else if (key == "live") {
        bit = 64, s = read(v, e.live, "live");
      } else if (key == "partition") {
        bit = 128, s = read(v, number, "partition");
        if (s && number > UINT32_MAX) s = malformed("partition");
        e.partition = Partition(static_cast<std::uint32_t>(number));
      } else if (key == "prevHash") {
        bit = 256, s = read(v, e.prev_hash, "prevHash");
      } else if (key == "schemaVersion") {
        bit = 512, s = read(v, number, "schemaVersion");
        e.schema_version = number > 1'000'000 ? -1 : static_cast<int>(number);
      } else if (key == "seq") {
        bit = 1024, s = read(v, e.seq.value, "seq");
      } else if (key == "time") {
        bit = 2048, s = read(v, time_text, "time");
      } else if (key == "type") {
        bit = 4096, s = read(v, type_name, "type");
      } else {
        return malformed("unknown member " + std::string(key));
      }
      if (!s) return s;
      if (seen & bit) return malformed("repeated member " + std::string(key));
      seen |= bit;
    }
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return malformed("trailing bytes");
  }
  KOBO_ASSERT((seen & ~std::uint64_t{16383}) == 0, "only the envelope's 14 members are marked seen");
  KOBO_ASSERT(((seen & kActorBit) != 0) == !e.actor.empty(),
              "an actor is on the wire exactly when there is one (the encoder leaves out an empty one)");
  // The version first: a log of another version is refused for what it is, not for its types.
  if (seen & 512 && e.schema_version != kEventSchemaVersion)
    return unsupported_schema_version(e.schema_version);
  // commandSeq and commandSize come together, and only for a command of more than one event.
  if ((seen & 12) == 0) {
    e.command_seq = e.seq;
    e.command_size = 1;
  } else if ((seen & 12) != 12 || e.command_size == 1) {
    return malformed("commandSeq and commandSize are both present, and only for a command of several events");
  }
  KOBO_ASSERT(
      (seen & 12) == 12 ? e.command_size != 1 : e.command_seq == e.seq && e.command_size == 1,
      "a command's members are read as the encoder writes them: only for a command of several events");
  if (((seen & ~kActorBit) | 12) != 8191) return malformed("the envelope lacks a member");
  KOBO_ASSERT(data_text.size() >= 2 && data_text.front() == '{',
              "the data member was read as an object's text");
  const auto type = event_type_from_string(type_name);
  if (!type) return Status::error("unknown event type " + type_name);
  const auto time = parse_iso8601(time_text);
  if (!time) return malformed("bad time");
  e.time = *time;
  if (!is_hex64(e.hash) || !is_hex64(e.prev_hash)) return malformed("hash or prevHash is not 64 hex digits");
  if (e.seq.value < 1 || e.command_size < 1 || e.command_seq > e.seq ||
      e.seq.value >= e.command_seq.value + e.command_size)
    return Status::error("event outside its command");
  KOBO_ASSERT(data_text.data() >= padded.data() &&
                  data_text.data() + data_text.size() <= padded.data() + bytes.size(),
              "the data's text lies inside the record it was read from");
  const std::size_t capacity = padded.size() - static_cast<std::size_t>(data_text.data() - padded.data());
  if (auto s = read_data(parser, *type, data_text, capacity, e.data); !s) return s;
  if (is_partition_level(*type) != e.business.empty())
    return malformed(
        "business must be empty exactly for a partition-level event (WriterStarted, WebhookDeliveriesEnded, "
        "ChainCheckpointed)");
  if (verify) {
    if (!hash_covers_bytes(bytes, e)) return Status::error("hash mismatch");
    if (auto s = validate(e); !s) return s;
  }
  KOBO_ASSERT(e.schema_version == kEventSchemaVersion && e.type() == *type, "what decodes is of this schema");
  KOBO_ASSERT(is_hex64(e.hash) && is_hex64(e.prev_hash) && is_partition_level(*type) == e.business.empty(),
              "a decoded event names its chain in hex, and a business unless it is the partition's");
  KOBO_ASSERT(e.command_seq <= e.seq && e.seq.value < e.command_seq.value + e.command_size,
              "a decoded event lies inside its command");
  return e;
}

}  // namespace

std::string_view to_string(EventType t) { return name_in(kTypeNames, t); }
bool is_partition_level(EventType t) {
  return t == EventType::writer_started || t == EventType::webhook_deliveries_ended ||
         t == EventType::chain_checkpointed;
}
std::optional<EventType> event_type_from_string(std::string_view s) { return value_in(kTypeNames, s); }
std::string_view to_string(TransactionStatus s) { return name_in(kTransactionStatusNames, s); }
std::string_view to_string(CollectionStatus s) { return name_in(kCollectionStatusNames, s); }
std::string_view to_string(WalletCategory c) { return name_in(kCategoryNames, c); }
std::string_view to_string(HoldStatus s) { return name_in(kHoldStatusNames, s); }
std::optional<HoldStatus> hold_status_from_string(std::string_view s) {
  return value_in(kHoldStatusNames, s);
}
std::string_view to_string(BeneficiaryType t) { return name_in(kBeneficiaryTypeNames, t); }
std::optional<TransactionStatus> transaction_status_from_string(std::string_view s) {
  return value_in(kTransactionStatusNames, s);
}
std::optional<WalletCategory> wallet_category_from_string(std::string_view s) {
  return value_in(kCategoryNames, s);
}
std::optional<BeneficiaryType> beneficiary_type_from_string(std::string_view s) {
  return value_in(kBeneficiaryTypeNames, s);
}

namespace {

Status check_kyc_tier(const std::optional<std::uint64_t>& tier) {
  if (tier && (*tier < 1 || *tier > kKycTiers)) return Status::error("a kycTier other than 1, 2 or 3");
  KOBO_ASSERT(!tier || (*tier >= 1 && *tier <= kKycTiers), "a tier checked is one of the tiers");
  return {};
}

// What the codec cannot check of the KYC tier facts (events/limits.h).
Status validate_tiers(const EventData& d) {
  if (const auto* x = std::get_if<WriterStarted>(&d); x != nullptr && x->tier_limits)
    return check_tier_limits(*x->tier_limits);
  if (const auto* x = std::get_if<WalletOpened>(&d)) return check_kyc_tier(x->kyc_tier);
  if (const auto* x = std::get_if<TransitWalletOpened>(&d)) return check_kyc_tier(x->kyc_tier);
  if (const auto* x = std::get_if<WalletTierChanged>(&d)) return check_kyc_tier(x->kyc_tier);
  return {};
}

// A bulk's refused items are items of it, each listed once, in order.
Status validate_bulk(const BulkTransferAccepted& x) {
  if (x.items == 0) return Status::error("a bulk transfer without items");
  if (!is_hex64(x.fingerprint)) return Status::error("a bulk transfer's fingerprint is not 64 hex digits");
  for (std::size_t k = 0; k < x.rejected.size(); ++k) {
    if (x.rejected[k].index >= x.items)
      return Status::error("a bulk transfer refuses an item it does not have");
    if (k > 0 && x.rejected[k].index <= x.rejected[k - 1].index)
      return Status::error("a bulk transfer's refused items are not in order");
  }
  if (x.atomic && !x.rejected.empty()) return Status::error("an atomic bulk transfer with a refused item");
  KOBO_ASSERT(x.rejected.empty() || x.rejected.back().index < x.items, "a bulk's refused items are its own");
  KOBO_ASSERT(x.rejected.size() <= x.items, "a bulk refuses no more items than it has");
  return {};
}

// A checkpoint's shape (whether its signature holds is the audit's to say, with the writer's key):
// a command of its own, hex key and signature, a log name of printable ASCII (it is a line of
// what the signature covers), after the first event.
Status validate_checkpoint(const Event& e, const ChainCheckpointed& c) {
  const auto hex_of = [](const std::string& s, std::size_t n) {
    return s.size() == n && std::all_of(s.begin(), s.end(), [](char ch) {
             return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
           });
  };
  if (e.command_size != 1) return Status::error("ChainCheckpointed is a command of its own");
  if (e.seq.value < 2) return Status::error("ChainCheckpointed signs an earlier event");
  if (!hex_of(c.key, 64) || (c.next_key && !hex_of(*c.next_key, 64)))
    return Status::error("ChainCheckpointed: key is not 64 hex digits");
  if (!hex_of(c.signature, 128)) return Status::error("ChainCheckpointed: signature is not 128 hex digits");
  if (c.log.empty() || c.log.size() > 255 ||
      !std::all_of(c.log.begin(), c.log.end(), [](char ch) { return ch > ' ' && ch < 127; }))
    return Status::error("ChainCheckpointed: log is not 1 to 255 printable characters");
  // checkpoint_message() writes the log's name and the head it signs as lines of their own.
  KOBO_ASSERT(c.log.find('\n') == std::string::npos && e.seq.value >= 2,
              "a checkpoint signs one line per field");
  return {};
}

// Deliveries that ended: some, at most the named limit, each a delivery's id, in a partition-level
// event.
Status validate_deliveries_ended(const Event& e, const WebhookDeliveriesEnded& x) {
  if (!e.business.empty()) return Status::error("webhook deliveries ended in an event of one business");
  if (x.deliveries.empty() || x.deliveries.size() > kWebhookDeliveriesPerEventMax)
    return Status::error("webhook deliveries ended: 1 to " + std::to_string(kWebhookDeliveriesPerEventMax) +
                         " per event");
  for (const WebhookDeliveryEnded& d : x.deliveries)
    if (!d.delivery.starts_with("whd-")) return Status::error("a webhook delivery id is not whd-…");
  KOBO_ASSERT(!x.deliveries.empty() && x.deliveries.size() <= kWebhookDeliveriesPerEventMax,
              "an event ends 1 to the named limit of deliveries");
  return {};
}

// What validate() checks of a money event `x`: its postings, its legs, its record ids.
template <typename Money>
Status validate_money(const Money& x) {
  Kobo sum;
  std::size_t wallet_postings = 0;
  for (const Posting& p : x.postings) {
    if (p.amount.value == 0) return Status::error("a posting of 0 kobo to " + p.account);
    if (!is_wallet_account(p.account) && !system_account_from_name(p.account))
      return Status::error("a posting to " + p.account + ", which is neither a wallet nor a system account");
    const auto next = checked_add(sum, p.amount);
    if (!next) return Status::error("the postings overflow");
    sum = *next;
    if (is_wallet_account(p.account)) ++wallet_postings;
  }
  if (x.postings.empty()) return Status::error("a money event without postings");
  if (sum.value != 0) return Status::error("the postings sum to " + std::to_string(sum.value) + ", not 0");
  KOBO_ASSERT(!x.postings.empty() && sum.value == 0, "the legs read are of postings that balance");
  using Legs = decltype(x.legs());
  if (auto legs = Legs::read(x.postings); !legs) return legs.status();
  // created() (events/ledger.h) keeps references into a vector of at most 3 records.
  KOBO_ASSERT(wallet_postings <= 3, "an event's legs hold at most 3 wallet postings");
  if constexpr (requires { x.ids; })
    KOBO_ASSERT(wallet_postings >= 1, "the legs of an event that creates records hold a wallet's posting");
  // Each wallet posting is a transaction record (events/ledger.h), numbered by `ids`.
  if constexpr (requires { x.ids; }) {
    if (x.ids.size() != wallet_postings) return Status::error("not one transaction id per wallet posting");
  } else if (wallet_postings != 0) {
    return Status::error("a wallet posting of an event that creates no transaction record");
  }
  // An event's legs() (events/event.h) count on it: each wallet posting is a numbered record.
  if constexpr (requires { x.ids; })
    KOBO_ASSERT(x.ids.size() == wallet_postings, "a valid event numbers each record it creates");
  return {};
}

}  // namespace

const std::vector<Posting>* postings_of(const EventData& d) {
  const std::vector<Posting>* postings = std::visit(
      [](const auto& x) -> const std::vector<Posting>* {
        if constexpr (requires { x.postings; })
          return &x.postings;
        else
          return nullptr;
      },
      d);
  KOBO_ASSERT(postings == nullptr || !is_partition_level(type_of(d)), "only a business's event moves money");
  return postings;
}

Status validate(const Event& e) {
  if (auto s = validate_tiers(e.data); !s) return s;
  if (const auto* bulk = std::get_if<BulkTransferAccepted>(&e.data)) return validate_bulk(*bulk);
  if (const auto* ended = std::get_if<WebhookDeliveriesEnded>(&e.data))
    return validate_deliveries_ended(e, *ended);
  if (const auto* c = std::get_if<ChainCheckpointed>(&e.data)) return validate_checkpoint(e, *c);
  if (const auto* r = std::get_if<BusinessRateLimitsSet>(&e.data)) {
    for (const auto& limit : {r->reads_per_second, r->writes_per_second})
      if (limit && *limit > kRateLimitPerSecondMax)
        return Status::error("a rate limit over " + std::to_string(kRateLimitPerSecondMax) + " per second");
    return {};
  }
  return std::visit(
      [](const auto& x) -> Status {
        if constexpr (requires { x.legs(); })
          return validate_money(x);
        else
          return {};
      },
      e.data);
}

std::string seal(Event& e) {
  KOBO_ASSERT(validate(e).ok(), "the writer appends only valid events");
  KOBO_ASSERT(is_partition_level(e.type()) == e.business.empty(),
              "only a partition-level event is of no business (the decoder refuses others)");
  return seal_unvalidated(e);
}

std::string seal_unvalidated(Event& e) {
  KOBO_ASSERT(e.seq.value >= 1, "seq starts at 1");
  KOBO_ASSERT(e.command_seq <= e.seq && e.seq.value < e.command_seq.value + e.command_size,
              "event outside its command");
  KOBO_ASSERT(is_hex64(e.prev_hash), "prevHash must be 64 hex digits");
  KOBO_ASSERT(e.schema_version == kEventSchemaVersion, "the writer writes the current schema only");
  const std::string canonical = canonical_without_hash(e);
  e.hash = to_hex(sha256(e.prev_hash, canonical));
  // Keys are sorted in the canonical form; the hash is prefixed so it need not be re-encoded.
  std::string wire;
  wire.reserve(canonical.size() + 76);
  wire += kWireHashPrefix;
  wire += e.hash;
  wire += "\",";
  wire.append(canonical, 1);
  KOBO_ASSERT(is_hex64(e.hash) && wire.size() == canonical.size() + 74,
              "a sealed event's hash is 64 hex digits");
  KOBO_ASSERT(wire_body(wire, e.hash) == std::string_view(canonical).substr(1),
              "the wire form is the hash member, then the canonical form");
  return wire;
}

namespace {

// The schemaVersion a record says it is of, read without decoding it; an error when it says none.
// The envelope's members are in key order and `data` comes before `schemaVersion`, so the last
// occurrence is the envelope's, whatever the data holds.
Result<int> stated_schema_version(std::string_view bytes) {
  constexpr std::string_view kMember = "\"schemaVersion\":";
  const auto at = bytes.rfind(kMember);
  if (at == std::string_view::npos) return Status::error("event without a schemaVersion");
  int version = -1;
  const char* first = bytes.data() + at + kMember.size();
  const auto [end, ec] = std::from_chars(first, bytes.data() + bytes.size(), version);
  if (ec != std::errc() || end == first) return Status::error("event with a malformed schemaVersion");
  KOBO_ASSERT(end > first && end <= bytes.data() + bytes.size(), "a version read lies inside the record");
  return version;
}

// A record of another schemaVersion is refused for what it is, even when its envelope has
// members v2's does not (a v1 event fails on its first unknown member, before its version).
Result<Event> decode_naming_other_versions(std::string_view bytes, bool verify) {
  auto e = decode(bytes, verify);
  KOBO_ASSERT(!e.ok() || e.value().schema_version == kEventSchemaVersion, "only this schema decodes");
  if (!e.ok()) {
    const auto version = stated_schema_version(bytes);
    if (version.ok() && version.value() != kEventSchemaVersion)
      return unsupported_schema_version(version.value());
  }
  return e;
}

}  // namespace

Result<Event> decode_event(std::string_view bytes) {
  return decode_naming_other_versions(bytes, /*verify=*/true);
}

Result<Event> decode_event_unverified(std::string_view bytes) {
  return decode_naming_other_versions(bytes, /*verify=*/false);
}

bool in_canonical_form(const Event& e, std::string_view bytes) {
  KOBO_ASSERT(e.schema_version == kEventSchemaVersion,
              "only an event of this schema is compared with its form");
  const auto body = wire_body(bytes, e.hash);
  return body && std::string_view(canonical_without_hash(e)).substr(1) == *body;
}

std::string encode_data(const EventData& d) {
  std::string out;
  JsonWriter w(out);
  std::visit([&](const auto& x) { write_object(w, x); }, d);
  KOBO_ASSERT(out.size() >= 2 && out.front() == '{' && out.back() == '}', "an event's data is a JSON object");
  return out;
}

Status unsupported_schema_version(int found) {
  KOBO_ASSERT(found != kEventSchemaVersion, "only another schemaVersion is unsupported");
  return Status::error("event schemaVersion " + std::to_string(found) +
                       " is not supported: this kobo reads schemaVersion " +
                       std::to_string(kEventSchemaVersion) + " only (there is no migration from older logs)");
}

Status check_schema_version(std::string_view bytes) {
  const auto version = stated_schema_version(bytes);
  if (!version.ok()) return version.status();
  if (version.value() != kEventSchemaVersion) return unsupported_schema_version(version.value());
  return {};
}

}  // namespace kobo
