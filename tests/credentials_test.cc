// query-api/credentials.h: the admin key's minimum strength.
#include "query-api/credentials.h"

#include <gtest/gtest.h>

namespace kobo {
namespace {

TEST(AdminKey, AWeakOneIsRefusedWithWhy) {
  EXPECT_NE(weak_admin_key("adm-integration-key"), std::nullopt) << "19 characters";
  EXPECT_NE(weak_admin_key(std::string(31, 'x') + "y").value_or("").find("distinct"), std::string::npos);
  EXPECT_NE(weak_admin_key("abababababababababababababababababab"), std::nullopt)
      << "two distinct characters";
  EXPECT_EQ(weak_admin_key("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"), std::nullopt);
  EXPECT_EQ(weak_admin_key("kobo-integration-admin-key-0123456789abcdef"), std::nullopt);
}

}  // namespace
}  // namespace kobo
