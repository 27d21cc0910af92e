#include "projection/view_keys.h"

#include <algorithm>
#include <cstdio>

#include "common/crypto.h"
#include "events/ledger.h"

namespace kobo::view_keys {

namespace {

// Bytes as a person reads them: printable ASCII as it is, the rest as \xNN.
void append_escaped(std::string& out, std::string_view bytes) {
  [[maybe_unused]] const std::size_t before = out.size();
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    }
  }
  KOBO_ASSERT(out.size() >= before + bytes.size(), "each byte reads as a character at least");
}

// Reads a key's parts off its front, each as a person reads it, joined by '/'.
class KeyParts {
 public:
  explicit KeyParts(std::string_view rest) : rest_(rest) {}
  // A 16-byte id as a UUID (every id the service makes is one: view_keys::id16).
  KeyParts& id() {
    if (rest_.size() < 16) return done();
    UuidBytes b{};
    std::copy(rest_.begin(), rest_.begin() + 16, reinterpret_cast<char*>(b.data()));
    part(format_uuid(b));
    rest_.remove_prefix(16);
    return *this;
  }
  KeyParts& mode() {
    if (rest_.empty() || static_cast<unsigned char>(rest_[0]) > 1) return done();
    part(rest_[0] == '\1' ? "live" : "test");
    rest_.remove_prefix(1);
    return *this;
  }
  KeyParts& number(int bytes) {
    KOBO_ASSERT(bytes >= 1 && bytes <= 8, "a key's number is 1 to 8 bytes");
    if (rest_.size() < static_cast<std::size_t>(bytes)) return done();
    part(std::to_string(get_be(rest_, 0, bytes)));
    rest_.remove_prefix(static_cast<std::size_t>(bytes));
    return *this;
  }
  KeyParts& byte() {
    if (rest_.empty()) return done();
    std::string one;
    append_escaped(one, rest_.substr(0, 1));
    part(one);
    rest_.remove_prefix(1);
    return *this;
  }
  // Whatever is left, escaped.
  std::string text() {
    done();
    return out_;
  }

 private:
  void part(std::string_view p) {
    KOBO_ASSERT(!p.empty(), "a key's part reads as something");
    if (!out_.empty()) out_ += '/';
    out_ += p;
  }
  KeyParts& done() {
    if (!rest_.empty()) {
      std::string tail;
      append_escaped(tail, rest_);
      part(tail);
      rest_ = {};
    }
    KOBO_ASSERT(rest_.empty(), "a key described whole");
    return *this;
  }
  std::string_view rest_;
  std::string out_;
};

}  // namespace

std::string describe(std::string_view key) {
  if (key.empty()) return "view ''/";
  std::string out = "view '" + std::string(key.substr(0, 1)) + "'";
  for (const TagName& v : kTagNames)
    if (key[0] == v.tag) out = v.name;
  KeyParts parts(key.substr(1));
  switch (key[0]) {
    case 'P':
    case 'Y':
    case 'S':
      parts.number(4);
      break;
    case 'B':
    case 'A':
    case 'W':
    case 'b':
    case 'D':
    case 'T':
    case 'J':
    case 'O':
    case 'U':
    case 'Z':
      parts.id();
      break;
    case 'a':
    case 'h':
    case 'H':
      parts.id().number(8);
      break;
    case 'L':
      parts.id().mode().number(8);
      break;
    case 'r':
    case 'w':
    case 'k':
      parts.id().mode();
      break;
    case 'e':
      parts.id().mode().number(8);
      break;
    case 'C':
      parts.byte().id().mode();
      break;
    case 'g':
      parts.byte().id().mode().number(8);
      break;
    case 'X':
      parts.byte().id().mode();
      break;
    default:
      break;
  }
  out += '/';
  out += parts.text();
  KOBO_ASSERT(out.size() > 1, "a key described as nothing");
  return out;
}

std::string id16(std::string_view id) {
  std::string out;
  out.reserve(16);
  const std::size_t dash = id.find('-');
  if (dash != std::string_view::npos) {
    if (const auto uuid = parse_uuid(id.substr(dash + 1))) {
      out.assign(reinterpret_cast<const char*>(uuid->data()), uuid->size());
      KOBO_ASSERT(out.size() == 16, "an id16 of a UUID is its 16 bytes");
      return out;
    }
  }
  const Sha256 digest = sha256(id);
  out.assign(reinterpret_cast<const char*>(digest.data()), 16);
  KOBO_ASSERT(out.size() == 16, "an id16 is 16 bytes");
  return out;
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string key_owner(std::string_view hash) {
  std::string k("K");
  if (hash.size() != 64) return k + std::string(hash);
  k.reserve(33);
  for (std::size_t i = 0; i < 64; i += 2) {
    const int hi = hex_digit(hash[i]);
    const int lo = hex_digit(hash[i + 1]);
    if (hi < 0 || lo < 0) return "K" + std::string(hash);
    k.push_back(static_cast<char>(hi * 16 + lo));
  }
  KOBO_ASSERT(k.size() == 33, "a key hash is keyed by its 32 bytes");
  return k;
}

std::string transaction_reference(std::string_view account, bool live, std::string_view reference) {
  std::string k = "r" + id16(account);
  k.push_back(live ? '\1' : '\0');
  for (std::size_t i = 0; i < kDerivedReferencePrefixes.size(); ++i) {
    if (!reference.starts_with(kDerivedReferencePrefixes[i])) continue;
    if (const auto uuid = parse_uuid(reference.substr(kDerivedReferencePrefixes[i].size()))) {
      k.push_back(static_cast<char>(i + 1));
      k.append(reinterpret_cast<const char*>(uuid->data()), uuid->size());
      KOBO_ASSERT(k.size() == 35, "a derived reference is keyed by its kind and its UUID's 16 bytes");
      return k;
    }
  }
  k.push_back('\0');
  k += reference;
  KOBO_ASSERT(k.size() == 19 + reference.size(), "a reference keyed as its text");
  return k;
}

namespace list {

std::string value(std::string_view bytes) {
  if (bytes.size() < 255) {
    std::string out(1, static_cast<char>(bytes.size()));
    out += bytes;
    KOBO_ASSERT(out.size() == 1 + bytes.size() && out.size() <= 255,
                "a short list value is its length and itself");
    return out;
  }
  // A longer value (a name, say) by its SHA-256: 255 then the digest's 32 bytes.
  const Sha256 digest = sha256(bytes);
  std::string out(1, '\xff');
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  KOBO_ASSERT(out.size() == 33, "a long list value is keyed by its digest");
  return out;
}

std::string value(std::int64_t number) {
  std::string out(1, '\x08');
  put_be(out, static_cast<std::uint64_t>(number));
  KOBO_ASSERT(out.size() == 9, "a number as a list value is 8 bytes");
  KOBO_ASSERT(static_cast<std::int64_t>(get_be(out, 1)) == number,
              "a number as a list value reads back as itself");
  return out;
}

}  // namespace list

}  // namespace kobo::view_keys
