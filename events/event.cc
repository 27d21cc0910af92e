#include "events/event.h"

#include <array>
#include <charconv>
#include <simdjson.h>

#include "common/crypto.h"
#include "common/json_dump.h"

namespace kobo {
namespace {

constexpr std::array<std::pair<EventType, std::string_view>, 11> kTypeNames{{
    {EventType::writer_started, "WriterStarted"},
    {EventType::business_created, "BusinessCreated"},
    {EventType::account_created, "AccountCreated"},
    {EventType::account_updated, "AccountUpdated"},
    {EventType::wallet_created, "WalletCreated"},
    {EventType::bank_account_added, "BankAccountAdded"},
    {EventType::collection_created, "CollectionCreated"},
    {EventType::collection_status_changed, "CollectionStatusChanged"},
    {EventType::debited, "Debited"},
    {EventType::credited, "Credited"},
    {EventType::transaction_status_changed, "TransactionStatusChanged"},
}};

// The canonical JSON of `e` without its hash: the envelope's members in key order, written
// directly around e.data (a json envelope built to be dumped cost as much as the dump).
std::string canonical_without_hash(const Event& e) {
  const auto number = [](std::string& out, std::uint64_t v) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  };
  std::string out;
  out.reserve(1024);
  out += "{\"business\":";
  append_json_string(out, e.business);
  out += ",\"commandSeq\":";
  number(out, e.command_seq.value);
  out += ",\"commandSize\":";
  number(out, e.command_size);
  out += ",\"data\":";
  append_json(out, e.data);
  out += ",\"epoch\":";
  number(out, e.epoch.value);
  out += e.live ? ",\"live\":true,\"partition\":" : ",\"live\":false,\"partition\":";
  number(out, e.partition.value);
  out += ",\"prevHash\":";
  append_json_string(out, e.prev_hash);
  out += ",\"schemaVersion\":";
  out += std::to_string(e.schema_version);
  out += ",\"seq\":";
  number(out, e.seq.value);
  out += ",\"time\":";
  append_json_string(out, format_iso8601(e.time));
  out += ",\"type\":";
  append_json_string(out, to_string(e.type));
  out += '}';
  return out;
}

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// The wire form is `{"hash":"<64 hex>",` followed by the canonical JSON without its hash, less
// its opening brace (seal()). So the hash is checked over the record's own bytes, with no
// re-encoding: any edited byte fails it, and the bytes it covers are the bytes just decoded.
// Whether those bytes are also in canonical form is in_canonical_form()'s question.
constexpr std::string_view kWireHashPrefix = "{\"hash\":\"";

// What follows `{"hash":"<hash>",` in `bytes`, or nullopt when they do not start so.
std::optional<std::string_view> wire_body(std::string_view bytes, const std::string& hash) {
  const std::size_t body_at = kWireHashPrefix.size() + hash.size() + 2;
  if (bytes.size() <= body_at || !bytes.starts_with(kWireHashPrefix) ||
      bytes.substr(kWireHashPrefix.size(), hash.size()) != hash || bytes.substr(body_at - 2, 2) != "\",")
    return std::nullopt;
  return bytes.substr(body_at);
}

bool hash_covers_bytes(std::string_view bytes, const Event& e) {
  const auto body = wire_body(bytes, e.hash);
  return body && to_hex(sha256({e.prev_hash, "{", *body})) == e.hash;
}

}  // namespace

std::string_view to_string(EventType t) {
  for (const auto& [type, name] : kTypeNames)
    if (type == t) return name;
  KOBO_ASSERT(false, "unnamed event type");
  return {};
}

std::optional<EventType> event_type_from_string(std::string_view s) {
  for (const auto& [type, name] : kTypeNames)
    if (name == s) return type;
  return std::nullopt;
}

std::string seal(Event& e) {
  KOBO_ASSERT(e.seq.value >= 1, "seq starts at 1");
  KOBO_ASSERT(e.command_seq <= e.seq && e.seq.value < e.command_seq.value + e.command_size,
              "event outside its command");
  KOBO_ASSERT(is_hex64(e.prev_hash), "prevHash must be 64 hex digits");
  KOBO_ASSERT(e.data.is_object(), "event data must be an object");
  const std::string canonical = canonical_without_hash(e);
  e.hash = to_hex(sha256(e.prev_hash, canonical));
  // Keys are sorted in the canonical form; the hash is prefixed so it need not be re-encoded.
  std::string wire;
  wire.reserve(canonical.size() + 76);
  wire += kWireHashPrefix;
  wire += e.hash;
  wire += "\",";
  wire.append(canonical, 1);
  return wire;
}

namespace {

nlohmann::json to_json(simdjson::dom::element in) {
  using simdjson::dom::element_type;
  switch (in.type()) {
    case element_type::OBJECT: {
      nlohmann::json out(nlohmann::json::value_t::object);
      auto& members = out.get_ref<nlohmann::json::object_t&>();
      // A repeated key keeps its last value, as nlohmann's own parser does.
      for (const auto [key, value] : simdjson::dom::object(in)) members[std::string(key)] = to_json(value);
      return out;
    }
    case element_type::ARRAY: {
      nlohmann::json out(nlohmann::json::value_t::array);
      auto& items = out.get_ref<nlohmann::json::array_t&>();
      for (const auto value : simdjson::dom::array(in)) items.push_back(to_json(value));
      return out;
    }
    case element_type::INT64: {
      // nlohmann keeps a non-negative integer unsigned; so does this, for equal values.
      const std::int64_t v = in.get_int64().value_unsafe();
      return v >= 0 ? nlohmann::json(static_cast<std::uint64_t>(v)) : nlohmann::json(v);
    }
    case element_type::UINT64: return in.get_uint64().value_unsafe();
    case element_type::DOUBLE: return in.get_double().value_unsafe();
    case element_type::STRING: return std::string(in.get_string().value_unsafe());
    case element_type::BOOL: return in.get_bool().value_unsafe();
    case element_type::NULL_VALUE: return nullptr;
  }
  return nullptr;
}

// The record as a JSON value. nlohmann's parser reads a byte at a time and was most of the cost
// of reading the log; simdjson parses the record at once and the tree is built from its result.
// What simdjson refuses (deeper than 1024 levels, an integer past 64 bits) goes to nlohmann,
// so the records accepted are the same as ever.
nlohmann::json parse_record(std::string_view bytes) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(bytes.data(), bytes.size()).get(root) == simdjson::SUCCESS) return to_json(root);
  return nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
}

Result<Event> decode(std::string_view bytes, bool verify_hash) {
  nlohmann::json j = parse_record(bytes);
  if (!j.is_object()) return Status::error("event is not a JSON object");
  try {
    Event e;
    e.hash = j.at("hash").get<std::string>();
    j.erase("hash");
    const auto type = event_type_from_string(j.at("type").get<std::string>());
    if (!type) return Status::error("unknown event type " + j.at("type").get<std::string>());
    e.type = *type;
    e.partition = Partition(j.at("partition").get<std::uint32_t>());
    e.seq = Seq(j.at("seq").get<std::uint64_t>());
    e.epoch = Epoch(j.at("epoch").get<std::uint64_t>());
    e.command_seq = Seq(j.at("commandSeq").get<std::uint64_t>());
    e.command_size = j.at("commandSize").get<std::uint32_t>();
    e.schema_version = j.at("schemaVersion").get<int>();
    e.business = j.at("business").get<std::string>();
    e.live = j.at("live").get<bool>();
    const auto time = parse_iso8601(j.at("time").get<std::string>());
    if (!time) return Status::error("bad event time");
    e.time = *time;
    e.prev_hash = j.at("prevHash").get<std::string>();
    e.data = std::move(j.at("data"));
    if (!e.data.is_object()) return Status::error("event data is not an object");
    if (!is_hex64(e.hash) || !is_hex64(e.prev_hash)) return Status::error("malformed hash");
    if (e.seq.value < 1 || e.command_size < 1 || e.command_seq > e.seq ||
        e.seq.value >= e.command_seq.value + e.command_size)
      return Status::error("event outside its command");
    if (e.schema_version != kEventSchemaVersion)
      return Status::error("unsupported schemaVersion " + std::to_string(e.schema_version));
    if (verify_hash && !hash_covers_bytes(bytes, e)) return Status::error("hash mismatch");
    return e;
  } catch (const nlohmann::json::exception& ex) {
    return Status::error(std::string("malformed event: ") + ex.what());
  }
}

}  // namespace

Result<Event> decode_event(std::string_view bytes) { return decode(bytes, /*verify_hash=*/true); }

Result<Event> decode_event_unverified(std::string_view bytes) { return decode(bytes, /*verify_hash=*/false); }

bool in_canonical_form(const Event& e, std::string_view bytes) {
  const auto body = wire_body(bytes, e.hash);
  return body && std::string_view(canonical_without_hash(e)).substr(1) == *body;
}

}  // namespace kobo
