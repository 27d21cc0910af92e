// The writer's compact wallet store: packed ids, integer account numbers and hashed names must
// answer exactly what the strings they replace would have answered.
#include <gtest/gtest.h>

#include "command/state.h"

namespace kobo {
namespace {

const Caller kAlice{"biz-a", "acc-a", false};
const WalletBank kBank{"099999", "Kobo Sandbox MFB"};
const std::string kId = "vba-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b";

WalletState wallet(std::string name, std::uint64_t number) {
  WalletState w;
  w.account_name = std::move(name);
  w.account_number = number;
  return w;
}

TEST(Wallets, FindsAWalletByExactlyItsId) {
  Wallets ws;
  ws.add(kId, kAlice, kBank, wallet("main", 17), /*named=*/true);
  ASSERT_NE(ws.find(kId), nullptr);
  EXPECT_EQ(ws.find(kId)->account_name, "main");
  EXPECT_EQ(ws.owner(*ws.find(kId)), kAlice);
  const auto facts = ws.facts(kId);
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(*facts, (WalletFacts{0, kId, "main", "0000000017", kBank.code, kBank.name}));
  EXPECT_FALSE(ws.facts("vba-none").has_value());
  for (const std::string& other : {
           std::string("vba-0F1E2D3C-4B5A-4978-8A6B-5C4D3E2F1A0B"),  // upper case
           std::string("0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"),      // no prefix
           std::string("trx-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"),  // another prefix
           std::string("vba-0f1e2d3c4b5a-4978-8a6b-5c4d3e2f1a0b-"),  // dashes moved
           std::string("vba-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0"),   // short
           kId + "0",                                                // long
           std::string("vba-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0c"),  // another uuid
           std::string("vba-"),
           std::string(""),
       })
    EXPECT_EQ(ws.find(other), nullptr) << other;
}

TEST(Wallets, KeepsAnIdOfAnotherShapeAsItIs) {
  Wallets ws;
  const std::string odd = "vba-0f1e2d3c-4b5a-1978-8a6b-5c4d3e2f1a0b";  // a uuid, but not v4
  ws.add(odd, kAlice, kBank, wallet("main", 17), true);
  ws.add("legacy-1", kAlice, kBank, wallet("second", 18), true);
  ASSERT_NE(ws.find(odd), nullptr);
  EXPECT_EQ(ws.find(odd)->account_name, "main");
  EXPECT_EQ(ws.find("legacy-1")->account_name, "second");
  EXPECT_EQ(ws.find("legacy-2"), nullptr);
  EXPECT_EQ(ws.id_with_number("0000000017"), odd);
  EXPECT_EQ(ws.id_with_number("0000000018"), "legacy-1");
}

TEST(Wallets, FindsAnIdByItsAccountNumberWithLeadingZeros) {
  Wallets ws;
  ws.add(kId, kAlice, kBank, wallet("main", 12'345'678), true);
  EXPECT_EQ(format_account_number(ws.find(kId)->account_number), "0012345678");
  EXPECT_EQ(ws.id_with_number("0012345678"), kId);
  for (const char* other :
       {"12345678", "012345678", "00012345678", "001234567x", " 012345678", "0012345679", ""})
    EXPECT_EQ(ws.id_with_number(other), std::nullopt) << other;
}

TEST(Wallets, ANameIsTakenOnlyInItsAccountAndMode) {
  Wallets ws;
  ws.add(kId, kAlice, kBank, wallet("main", 17), true);
  ws.add("vba-11111111-2222-4333-8444-555555555555", kAlice, kBank, wallet("transit", 18), /*named=*/false);
  EXPECT_TRUE(ws.name_taken("acc-a", false, "main"));
  EXPECT_FALSE(ws.name_taken("acc-a", true, "main"));
  EXPECT_FALSE(ws.name_taken("acc-b", false, "main"));
  EXPECT_FALSE(ws.name_taken("acc-a", false, "Main"));
  EXPECT_FALSE(ws.name_taken("acc-a", false, "transit")) << "transit wallets are exempt from the name rule";
}

}  // namespace
}  // namespace kobo
