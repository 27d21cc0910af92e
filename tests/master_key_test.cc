// The deployment's master key (common/master_key.h): wrapping binds a key to its context and opens
// under that master key only; where a node's key comes from, and how a data dir of an older kobo
// adopts its webhook master secret.
#include "common/master_key.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/crypto.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<LocalMasterKey> key_of(std::string material) {
  auto k = LocalMasterKey::make(std::move(material));
  EXPECT_TRUE(k.ok()) << k.status().message();
  return std::move(k).value();
}

TEST(LocalMasterKey, WrapsForOneContextAndOpensOnlyThere) {
  const auto master = key_of(std::string(64, 'a'));
  const std::string wrapped = master->wrap("sk_live_0123", "acc-1|live|key-1").value();
  EXPECT_TRUE(wrapped.starts_with("kw1." + master->id() + ".")) << wrapped;
  EXPECT_EQ(wrapped.find("sk_live"), std::string::npos);
  EXPECT_EQ(master->unwrap(wrapped, "acc-1|live|key-1").value(), "sk_live_0123");
  // Moved to another account, mode or key, it does not open.
  for (const char* context : {"acc-2|live|key-1", "acc-1|test|key-1", "acc-1|live|key-2", ""})
    EXPECT_FALSE(master->unwrap(wrapped, context).ok()) << context;
  // Another master key says which one it would need.
  const auto other = key_of(std::string(64, 'b'));
  EXPECT_NE(other->id(), master->id());
  const auto refused = other->unwrap(wrapped, "acc-1|live|key-1");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(master->id()), std::string::npos) << refused.status().message();
  // Edited, or not a wrapped key at all. The edit is inside the text, where every bit of a
  // character is the ciphertext's (the last characters of a base64 text carry unused bits).
  std::string edited = wrapped;
  char& c = edited[edited.size() / 2];
  c = c == 'A' ? 'z' : 'A';
  EXPECT_FALSE(master->unwrap(edited, "acc-1|live|key-1").ok());
  EXPECT_FALSE(master->unwrap("sk_live_0123", "acc-1|live|key-1").ok());
  EXPECT_FALSE(master->unwrap("kw1." + master->id() + ".!!!", "acc-1|live|key-1").ok());
}

TEST(LocalMasterKey, RefusesShortMaterialAndMacsWithTheMaterial) {
  EXPECT_FALSE(LocalMasterKey::make(std::string(31, 'x')).ok());
  const auto master = key_of(std::string(32, 'x'));
  EXPECT_EQ(master->mac("label").value(), hmac_sha256(std::string(32, 'x'), "label"));
  EXPECT_EQ(master->id(), key_of(std::string(32, 'x'))->id())
      << "the id names the key, the same on every node";
}

class MasterKeySource : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kobo-master-key-" + random_hex(6));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
  }
  static unsigned mode_of(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 0777;
  }
  fs::path dir_;
};

TEST_F(MasterKeySource, MakesOneInTheDataDirWhenNoneIsGivenAndWarns) {
  const auto first = resolve_master_key({{}, "", "", dir_});
  ASSERT_TRUE(first.ok()) << first.status().message();
  const fs::path own = dir_ / "master-key";
  ASSERT_TRUE(fs::exists(own));
  EXPECT_EQ(mode_of(own), 0600u);
  ASSERT_FALSE(first->warnings.empty());
  // The next start finds the same key.
  const auto second = resolve_master_key({{}, "", "", dir_});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->key->id(), first->key->id());
}

TEST_F(MasterKeySource, AdoptsTheWebhookMasterSecretOfAnOlderKobo) {
  const std::string old(64, 'c');
  write(dir_ / "webhook-master-secret", old + "\n");
  const auto r = resolve_master_key({{}, "", "", dir_});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "webhook-master-secret"));
  EXPECT_TRUE(fs::exists(dir_ / "master-key"));
  // The webhook secrets it derived stay the same.
  EXPECT_EQ(r->key->mac("x").value(), hmac_sha256(old, "x"));
}

TEST_F(MasterKeySource, TakesAFileOrTheEnvironmentButNotBothNorOneThatDiffersFromTheDataDirs) {
  const fs::path file = dir_ / "given.key";
  write(file, std::string(48, 'd') + "\n");
  ::chmod(file.c_str(), 0600);
  const fs::path data = dir_ / "data";
  fs::create_directories(data);
  const auto from_file = resolve_master_key({file, "", "", data});
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->key->mac("x").value(), hmac_sha256(std::string(48, 'd'), "x"));
  EXPECT_TRUE(from_file->warnings.empty());
  EXPECT_FALSE(fs::exists(data / "master-key")) << "a configured key leaves nothing in the data dir";
  const auto from_env = resolve_master_key({{}, std::string(48, 'd'), "", data});
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->key->id(), from_file->key->id());

  EXPECT_FALSE(resolve_master_key({file, std::string(48, 'd'), "", data}).ok()) << "given twice";
  EXPECT_FALSE(resolve_master_key({{}, std::string(20, 'd'), "", data}).ok()) << "too short";
  EXPECT_FALSE(resolve_master_key({dir_ / "missing", "", "", data}).ok());
  // A data dir that sealed under its own key refuses another one.
  write(data / "master-key", std::string(64, 'e'));
  const auto differs = resolve_master_key({file, "", "", data});
  ASSERT_FALSE(differs.ok());
  EXPECT_NE(differs.status().message().find("master-key"), std::string::npos) << differs.status().message();
  EXPECT_TRUE(resolve_master_key({{}, std::string(64, 'e'), "", data}).ok()) << "the same key is welcome";
}

TEST_F(MasterKeySource, TakesTheDeprecatedWebhookMasterSecretAsTheMasterKey) {
  const auto legacy = resolve_master_key({{}, "", std::string(40, 'f'), dir_});
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  EXPECT_EQ(legacy->key->mac("x").value(), hmac_sha256(std::string(40, 'f'), "x"));
  EXPECT_FALSE(legacy->warnings.empty()) << "deprecated, and said so";
  EXPECT_TRUE(resolve_master_key({{}, std::string(40, 'f'), std::string(40, 'f'), dir_}).ok());
  EXPECT_FALSE(resolve_master_key({{}, std::string(40, 'g'), std::string(40, 'f'), dir_}).ok())
      << "two different keys: which one derives the webhook secrets?";
}

}  // namespace
}  // namespace kobo
