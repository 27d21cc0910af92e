#include "common/crypto.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>
#include <vector>

namespace kobo {
namespace {

TEST(Sha256, MatchesTheFips180Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, PartsHashAsTheirConcatenation) {
  const Sha256 whole = sha256("prev-hash{\"a\":1}");
  EXPECT_EQ(sha256("prev-hash", "{\"a\":1}"), whole);
  EXPECT_EQ(sha256({"prev-", "hash", "{", "\"a\":1}"}), whole);
  EXPECT_NE(sha256({"prev-", "hash", "{\"a\":2}"}), whole);
}

TEST(Sha256, EachThreadGetsTheSameDigest) {
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] {
      for (int i = 0; i < 1000; ++i) got[t] = sha256_hex("abc");
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(HmacSha512, MatchesRfc4231TestCase2) {
  EXPECT_EQ(hmac_sha512_hex("Jefe", "what do ya want for nothing?"),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
            "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737");
}

TEST(HmacSha256, MatchesRfc4231TestCase2) {
  const Sha256 mac = hmac_sha256("Jefe", "what do ya want for nothing?");
  EXPECT_EQ(to_hex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Base64, MatchesRfc4648VectorsBothWays) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), plain);
  }
  EXPECT_EQ(base64_decode("Zm9"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9v!A=="), std::nullopt);
}

TEST(RandomIds, UuidsAreCanonicalVersion4AndDistinct) {
  const std::regex shape("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {  // crosses several refills of the random pool
    const std::string id = uuid_v4();
    ASSERT_TRUE(std::regex_match(id, shape)) << id;
    ASSERT_TRUE(seen.insert(id).second) << "repeated " << id;
  }
}

TEST(RandomIds, FormatUuidWritesBytesInOrderWithTheDashesOf8_4_4_4_12) {
  UuidBytes b;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 17);
  EXPECT_EQ(format_uuid(b), "00112233-4455-6677-8899-aabbccddeeff");
}

TEST(RandomIds, ParseUuidReadsCanonicalTextOnly) {
  UuidBytes b;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 17);
  EXPECT_EQ(parse_uuid("00112233-4455-6677-8899-aabbccddeeff"), b);
  for (int i = 0; i < 1'000; ++i) {
    const std::string id = uuid_v4();
    const auto parsed = parse_uuid(id);
    ASSERT_TRUE(parsed.has_value()) << id;
    EXPECT_EQ(format_uuid(*parsed), id);
  }
  const std::string good = "00112233-4455-6677-8899-aabbccddeeff";
  EXPECT_EQ(parse_uuid(good.substr(1)), std::nullopt);
  EXPECT_EQ(parse_uuid(good + "0"), std::nullopt);
  EXPECT_EQ(parse_uuid("00112233-4455-6677-8899-AABBCCDDEEFF"), std::nullopt);  // canonical is lowercase
  EXPECT_EQ(parse_uuid("001122334-455-6677-8899-aabbccddeeff"), std::nullopt);
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (const char c : {'g', '-', 'G', ' ', '\0', '\xff'}) {
      if (c == '-' && (at == 8 || at == 13 || at == 18 || at == 23)) continue;
      std::string bad = good;
      bad[at] = c;
      EXPECT_EQ(parse_uuid(bad), std::nullopt) << "at " << at << ": " << bad;
    }
  }
}

TEST(RandomIds, HexHasTheAskedLengthAndDiffers) {
  const std::string a = random_hex(32), b = random_hex(5000);  // the second spans pool refills
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(b.size(), 10'000u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, random_hex(32));
}

TEST(Aes256Gcm, OpensWhatItSealedAndNothingElse) {
  const std::string key(32, 'k'), other(32, 'o');
  const std::string sealed = aes256gcm_seal(key, "sk_test_secret", "acc-1|test");
  EXPECT_EQ(sealed.size(), std::string("sk_test_secret").size() + kAes256GcmOverheadBytes);
  EXPECT_EQ(sealed.find("sk_test_secret"), std::string::npos) << "the plaintext is not in the sealed form";
  EXPECT_EQ(aes256gcm_open(key, sealed, "acc-1|test"), "sk_test_secret");
  // A random nonce: the same plaintext seals differently each time.
  EXPECT_NE(aes256gcm_seal(key, "sk_test_secret", "acc-1|test"), sealed);
  // Another key, other associated data, any changed byte, a cut: nothing opens.
  EXPECT_EQ(aes256gcm_open(other, sealed, "acc-1|test"), std::nullopt);
  EXPECT_EQ(aes256gcm_open(key, sealed, "acc-1|live"), std::nullopt);
  for (std::size_t i = 0; i < sealed.size(); ++i) {
    std::string bad = sealed;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_EQ(aes256gcm_open(key, bad, "acc-1|test"), std::nullopt) << "byte " << i;
  }
  EXPECT_EQ(aes256gcm_open(key, sealed.substr(0, sealed.size() - 1), "acc-1|test"), std::nullopt);
  EXPECT_EQ(aes256gcm_open(key, "short", "acc-1|test"), std::nullopt);
  EXPECT_EQ(aes256gcm_open(key, aes256gcm_seal(key, "", "x"), "x"), "");
}

// NIST's GCM test vector (gcmEncryptExtIV256.rsp, Count 0 of [Keylen = 256] [IVlen = 96]
// [PTlen = 128] [AADlen = 0] [Taglen = 128]): our sealed form is nonce | ciphertext | tag.
TEST(Aes256Gcm, OpensANistVector) {
  const auto bytes = [](std::string_view hex) {
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2)
      out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
  };
  const std::string key = bytes("31bdadd96698c204aa9ce1448ea94ae1fb4a9a0b3c9d773b51bb1822666b8f22");
  const std::string iv = bytes("0d18e06c7c725ac9e362e1ce");
  const std::string pt = bytes("2db5168e932556f8089a0622981d017d");
  const std::string ct = bytes("fa4362189661d163fcd6a56d8bf0405a");
  const std::string tag = bytes("d636ac1bbedd5cc3ee727dc2ab4a9489");
  EXPECT_EQ(aes256gcm_open(key, iv + ct + tag, ""), pt);
}

}  // namespace
}  // namespace kobo
