// Request validation: class-validator's constraint names and exact messages, one row per case.

#include "query-api/validation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <string>

namespace kobo::http {
namespace {

using nlohmann::json;

struct Case {
  const char* name;
  const char* body;
  std::function<void(Validator&)> rules;
  const char* expected;  // the errors object, or "null" when the body is valid
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ValidatorTable : public ::testing::TestWithParam<Case> {};

TEST_P(ValidatorTable, ReportsExactConstraintsAndMessages) {
  const Case& c = GetParam();
  const json body = json::parse(c.body);
  Validator v(body);
  c.rules(v);
  const auto errors = v.errors();
  const json expected = json::parse(c.expected);
  if (expected.is_null()) {
    EXPECT_FALSE(errors.has_value()) << errors->dump();
    EXPECT_TRUE(v.ok());
  } else {
    ASSERT_TRUE(errors.has_value());
    EXPECT_EQ(*errors, expected) << errors->dump();
    EXPECT_FALSE(v.ok());
  }
}

const auto kAmount = [](Validator& v) { v.field("amount").is_int().min(10'000).max(1'000'000'000); };

INSTANTIATE_TEST_SUITE_P(
    Constraints, ValidatorTable,
    ::testing::Values(
        // One row per constraint, each with its exact message.
        Case{"IsNotEmpty", R"({"narration": ""})", [](Validator& v) { v.field("narration").is_not_empty(); },
             R"({"narration": {"isNotEmpty": "narration should not be empty"}})"},
        Case{"IsString", R"({"narration": 5})", [](Validator& v) { v.field("narration").is_string(); },
             R"({"narration": {"isString": "narration must be a string"}})"},
        Case{"IsInt", R"({"count": [1]})", [](Validator& v) { v.field("count").is_int(); },
             R"({"count": {"isInt": "count must be an integer number"}})"},
        Case{"Min", R"({"amount": 9999})", kAmount,
             R"({"amount": {"min": "amount must not be less than 10000"}})"},
        Case{"Max", R"({"amount": 1000000001})", kAmount,
             R"({"amount": {"max": "amount must not be greater than 1000000000"}})"},
        Case{"IsIn", R"({"category": "tertiary"})",
             [](Validator& v) {
               v.field("category").is_in({"primary", "secondary"});
             },
             R"({"category": {"isIn": "category must be one of the following values: primary, secondary"}})"},
        Case{"IsEmail", R"({"emailAddress": "not-an-email"})",
             [](Validator& v) { v.field("emailAddress").is_email(); },
             R"({"emailAddress": {"isEmail": "emailAddress must be an email"}})"},
        Case{"IsBoolean", R"({"live": "true"})", [](Validator& v) { v.field("live").is_boolean(); },
             R"({"live": {"isBoolean": "live must be a boolean value"}})"},
        Case{"IsUrl", R"({"url": "ftp://example.com/x"})", [](Validator& v) { v.field("url").is_url(); },
             R"({"url": {"isUrl": "url must be a URL address"}})"},
        Case{"MinLength", R"({"reference": "abcd"})",
             [](Validator& v) { v.field("reference").min_length(5); },
             R"({"reference": {"minLength": "reference must be longer than or equal to 5 characters"}})"},
        Case{"IsObject", R"({"mobile": [1]})", [](Validator& v) { v.field("mobile").is_object(); },
             R"({"mobile": {"isObject": "mobile must be an object"}})"},
        Case{"IsArray", R"({"webhooks": "https://a.example"})",
             [](Validator& v) { v.field("webhooks").is_array(); },
             R"({"webhooks": {"isArray": "webhooks must be an array"}})"},
        Case{
            "IsNumber", R"({"expireIn": "600"})", [](Validator& v) { v.field("expireIn").is_number(); },
            R"({"expireIn": {"isNumber": "expireIn must be a number conforming to the specified constraints"}})"},
        Case{"ArrayMaxSize", R"({"webhooks": ["https://a.io","https://b.io","https://c.io"]})",
             [](Validator& v) { v.field("webhooks").array_max_size(2); },
             R"({"webhooks": {"arrayMaxSize": "webhooks must contain no more than 2 elements"}})"},
        Case{"EachIsUrl", R"({"webhooks": ["https://a.io/hook", "nope"]})",
             [](Validator& v) { v.field("webhooks").is_array().each_is_url(); },
             R"({"webhooks": {"isUrl": "each value in webhooks must be a URL address"}})"},
        Case{"ValidBodyHasNoErrors",
             R"({"amount": 10000, "narration": "rent", "category": "primary", "live": false,
                 "emailAddress": "a.b+c@example.co.uk", "url": "https://hooks.example.com/x?y=1",
                 "webhooks": ["http://127.0.0.1:8080/h"], "expireIn": 600.5})",
             [](Validator& v) {
               kAmount(v);
               v.field("narration").is_not_empty().is_string().min_length(4);
               v.field("category").is_in({"primary", "secondary"});
               v.field("live").is_boolean();
               v.field("emailAddress").is_email();
               v.field("url").is_url();
               v.field("webhooks").is_array().array_max_size(5).each_is_url();
               v.field("expireIn").is_number().min(600).max(1800);
             },
             "null"},

        // Missing and null required fields fail every declared constraint; optional ones skip.
        Case{"MissingRequiredFailsEveryConstraint", R"({})",
             [](Validator& v) {
               kAmount(v);
               v.field("narration").is_not_empty().is_string();
             },
             R"({"amount": {"isInt": "amount must be an integer number",
                            "min": "amount must not be less than 10000",
                            "max": "amount must not be greater than 1000000000"},
                 "narration": {"isNotEmpty": "narration should not be empty",
                               "isString": "narration must be a string"}})"},
        Case{"NullRequiredFailsEveryConstraint", R"({"narration": null})",
             [](Validator& v) { v.field("narration").is_not_empty().is_string(); },
             R"({"narration": {"isNotEmpty": "narration should not be empty",
                               "isString": "narration must be a string"}})"},
        Case{"OptionalAbsentIsSkipped", R"({})",
             [](Validator& v) { v.optional("reference").is_string().min_length(5); }, "null"},
        Case{"OptionalNullIsSkipped", R"({"reference": null})",
             [](Validator& v) { v.optional("reference").is_string(); }, "null"},
        Case{"OptionalPresentIsChecked", R"({"reference": 12})",
             [](Validator& v) { v.optional("reference").is_string(); },
             R"({"reference": {"isString": "reference must be a string"}})"},

        // Amounts are integers: no fractions, strings, booleans, or wrapping. A number written
        // with a point but no fraction is one (as JSON Schema and class-validator's isInt say).
        Case{"FloatWithFractionIsNotInt", R"({"amount": 10000.5})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number"}})"},
        Case{"IntegralFloatIsInt", R"({"amount": 10000.0})", kAmount, "null"},
        Case{"IntegralFloatInExponentFormIsInt", R"({"amount": 1e4})", kAmount, "null"},
        Case{"IntegralFloatBeyondExactIntegersIsNotInt", R"({"amount": 1e300})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number",
                            "max": "amount must not be greater than 1000000000"}})"},
        Case{"StringAmountFailsIntAndBounds", R"({"amount": "10000"})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number",
                            "min": "amount must not be less than 10000",
                            "max": "amount must not be greater than 1000000000"}})"},
        Case{"BooleanAmountIsNotInt", R"({"amount": true})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number",
                            "min": "amount must not be less than 10000",
                            "max": "amount must not be greater than 1000000000"}})"},
        Case{"NegativeAmount", R"({"amount": -5})", kAmount,
             R"({"amount": {"min": "amount must not be less than 10000"}})"},
        Case{"AmountAboveUint64", R"({"amount": 99999999999999999999999})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number",
                            "max": "amount must not be greater than 1000000000"}})"},
        Case{"AmountAboveInt64", R"({"amount": 18446744073709551615})", kAmount,
             R"({"amount": {"isInt": "amount must be an integer number",
                            "max": "amount must not be greater than 1000000000"}})"},
        Case{"AmountInt64Min", R"({"amount": -9223372036854775808})", kAmount,
             R"({"amount": {"min": "amount must not be less than 10000"}})"},
        Case{"AmountAtBothBounds", R"({"low": 10000, "high": 1000000000})",
             [](Validator& v) {
               v.field("low").is_int().min(10'000).max(1'000'000'000);
               v.field("high").is_int().min(10'000).max(1'000'000'000);
             },
             "null"},

        // Nested objects report "parent.child".
        Case{"NestedFieldsUseDottedNames", R"({"mobile": {"phoneNumber": 8012345678}})",
             [](Validator& v) {
               v.field("mobile").is_object();
               auto mobile = v.nested("mobile");
               mobile.field("phoneNumber").is_not_empty().is_string();
               mobile.field("isoCode").is_string();
             },
             R"({"mobile.phoneNumber": {"isString": "mobile.phoneNumber must be a string"},
                 "mobile.isoCode": {"isString": "mobile.isoCode must be a string"}})"},
        Case{"NestedAbsentReportsOnlyTheParent", R"({})",
             [](Validator& v) {
               v.field("mobile").is_object();
               auto mobile = v.nested("mobile");
               mobile.field("phoneNumber").is_string();
             },
             R"({"mobile": {"isObject": "mobile must be an object"}})"},
        Case{"NestedValid", R"({"mobile": {"phoneNumber": "08012345678", "isoCode": "NG"}})",
             [](Validator& v) {
               v.field("mobile").is_object();
               auto mobile = v.nested("mobile");
               mobile.field("phoneNumber").is_not_empty().is_string();
               mobile.field("isoCode").is_string().min_length(2);
             },
             "null"}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return std::string(param_info.param.name); });

struct TextCase {
  const char* value;
  bool valid;
};

class EmailTable : public ::testing::TestWithParam<TextCase> {};
TEST_P(EmailTable, AcceptsPlainAddressesOnly) {
  const json body = {{"e", GetParam().value}};
  Validator v(body);
  v.field("e").is_email();
  EXPECT_EQ(v.ok(), GetParam().valid) << GetParam().value;
}
INSTANTIATE_TEST_SUITE_P(
    Emails, EmailTable,
    ::testing::Values(TextCase{"ada@example.com", true}, TextCase{"a.b+c@mail.example.ng", true},
                      TextCase{"ada@example", false}, TextCase{"ada@@example.com", false},
                      TextCase{"a da@example.com", false}, TextCase{"@example.com", false},
                      TextCase{"ada@.example.com", false}, TextCase{"ada@example.c", false},
                      TextCase{"ada@-x.com", false}, TextCase{"ada.@example.com", false},
                      TextCase{"", false}));

class UrlTable : public ::testing::TestWithParam<TextCase> {};
TEST_P(UrlTable, AcceptsHttpAndHttpsWithAHost) {
  const json body = {{"u", GetParam().value}};
  Validator v(body);
  v.field("u").is_url();
  EXPECT_EQ(v.ok(), GetParam().valid) << GetParam().value;
}
INSTANTIATE_TEST_SUITE_P(Urls, UrlTable,
                         ::testing::Values(TextCase{"https://hooks.example.com/kobo?x=1", true},
                                           TextCase{"http://127.0.0.1:8080/h", true},
                                           TextCase{"HTTPS://EXAMPLE.COM", true},
                                           TextCase{"ftp://example.com", false}, TextCase{"http://", false},
                                           TextCase{"https:///path", false},
                                           TextCase{"example.com/path", false}, TextCase{"not a url", false},
                                           TextCase{"", false}));

TEST(Validator, LengthsCountCharactersAsJsonSchemaDoes) {
  const json body = {{"euros", "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC"},  // 5 × U+20AC
                     {"emoji", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80"}};  // 2 × U+1F600
  Validator v(body);
  v.field("euros").min_length(5).max_length(5);
  v.field("emoji").min_length(2).max_length(2);
  EXPECT_TRUE(v.ok()) << v.errors()->dump();
  Validator longer(body);
  longer.field("emoji").max_length(1);
  EXPECT_FALSE(longer.ok());
}

TEST(Validator, ReportsEveryFailingFieldAtOnce) {
  const json body = json::parse(R"({"amount": 1, "currency": "USD"})");
  Validator v(body);
  kAmount(v);
  v.field("currency").is_in({"NGN"});
  v.field("narration").is_string();
  ASSERT_TRUE(v.errors().has_value());
  EXPECT_EQ(v.errors()->size(), 3u);
}

TEST(ParseJsonObject, AcceptsObjectsAndTreatsAnEmptyBodyAsEmptyObject) {
  EXPECT_EQ(parse_json_object(""), json::object());
  EXPECT_EQ(parse_json_object("  \r\n"), json::object());
  EXPECT_EQ(parse_json_object(R"({"a":1})"), json({{"a", 1}}));
}

TEST(ParseJsonObject, RejectsMalformedJsonAndNonObjects) {
  for (const char* body : {"{", "{\"a\":}", "[1,2]", "null", "42", "\"text\"", "{\"a\":1} trailing", "\xff"})
    EXPECT_FALSE(parse_json_object(body).has_value()) << body;
}

// The deepest body the limit lets through (a 64 KiB body can nest about 30,000 deep): refused
// past kJsonDepthMax (docs/security.md), without the parser ever walking it.
TEST(ParseJsonObject, SurvivesDeepNestingWithinTheBodyLimit) {
  const std::size_t depth = 30'000;
  const std::string deep = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  EXPECT_FALSE(parse_json_object(deep).has_value());
  const std::string allowed =
      "{\"a\":" + std::string(kJsonDepthMax - 1, '[') + std::string(kJsonDepthMax - 1, ']') + "}";
  const auto parsed = parse_json_object(allowed);
  ASSERT_TRUE(parsed.has_value());
  Validator v(*parsed);
  v.field("a").is_array();
  EXPECT_TRUE(v.ok());
}

TEST(AsInt64, ConvertsOnlyIntegersInRange) {  // numbers with no fraction, exact in a double
  EXPECT_EQ(as_int64(json(42)), 42);
  EXPECT_EQ(as_int64(json(std::numeric_limits<std::int64_t>::min())),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(as_int64(json::parse("9223372036854775807")), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(as_int64(json::parse("9223372036854775808")).has_value());
  EXPECT_EQ(as_int64(json(10000.0)), 10000);
  EXPECT_EQ(as_int64(json(-9'007'199'254'740'992.0)), -9'007'199'254'740'992);
  EXPECT_FALSE(as_int64(json(10000.5)).has_value());
  EXPECT_FALSE(as_int64(json::parse("18446744073709551616")).has_value());  // a float beyond 2^53
  EXPECT_FALSE(as_int64(json("10000")).has_value());
  EXPECT_FALSE(as_int64(json(true)).has_value());
}

// ---- Query parameters of list endpoints ----

struct QueryCase {
  const char* name;
  QueryParams query;
  std::int64_t page;
  std::int64_t per_page;
  const char* expected;  // errors, or "null"
};

void PrintTo(const QueryCase& c, std::ostream* os) { *os << c.name; }

class PaginationTable : public ::testing::TestWithParam<QueryCase> {};

TEST_P(PaginationTable, ParsesPageAndPerPage) {
  const QueryCase& c = GetParam();
  QueryValidator q(c.query);
  const PageRequest p = q.pagination();
  EXPECT_EQ(p.page, c.page);
  EXPECT_EQ(p.per_page, c.per_page);
  const json expected = json::parse(c.expected);
  if (expected.is_null()) {
    EXPECT_FALSE(q.errors().has_value()) << q.errors()->dump();
  } else {
    ASSERT_TRUE(q.errors().has_value());
    EXPECT_EQ(*q.errors(), expected) << q.errors()->dump();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pagination, PaginationTable,
    ::testing::Values(
        QueryCase{"Defaults", {}, 1, 10, "null"},
        QueryCase{"Explicit", {{"page", "3"}, {"perPage", "100"}}, 3, 100, "null"},
        QueryCase{"FirstOfRepeated", {{"page", "2"}, {"page", "5"}}, 2, 10, "null"},
        QueryCase{"PerPageAboveMax",
                  {{"perPage", "101"}},
                  1,
                  10,
                  R"({"perPage": {"max": "perPage must not be greater than 100"}})"},
        QueryCase{"PerPageZero",
                  {{"perPage", "0"}},
                  1,
                  10,
                  R"({"perPage": {"min": "perPage must not be less than 1"}})"},
        QueryCase{"PageZero", {{"page", "0"}}, 1, 10, R"({"page": {"min": "page must not be less than 1"}})"},
        QueryCase{
            "PageNegative", {{"page", "-2"}}, 1, 10, R"({"page": {"min": "page must not be less than 1"}})"},
        QueryCase{"PageNotANumber",
                  {{"page", "two"}},
                  1,
                  10,
                  R"({"page": {"isInt": "page must be an integer number",
                               "min": "page must not be less than 1"}})"},
        QueryCase{"PerPageFraction",
                  {{"perPage", "2.5"}},
                  1,
                  10,
                  R"({"perPage": {"isInt": "perPage must be an integer number",
                                  "min": "perPage must not be less than 1",
                                  "max": "perPage must not be greater than 100"}})"},
        QueryCase{"PerPageHugeSaturates",
                  {{"perPage", "99999999999999999999999"}},
                  1,
                  10,
                  R"({"perPage": {"max": "perPage must not be greater than 100"}})"},
        QueryCase{"PageHugeSaturates",
                  {{"page", "99999999999999999999999"}},
                  std::numeric_limits<std::int64_t>::max(),
                  10,
                  "null"}),
    [](const ::testing::TestParamInfo<QueryCase>& param_info) { return std::string(param_info.param.name); });

TEST(QueryValidator, OffsetSaturatesOnAbsurdPages) {
  EXPECT_EQ((PageRequest{1, 10}.offset()), 0);
  EXPECT_EQ((PageRequest{3, 10}.offset()), 20);
  EXPECT_EQ((PageRequest{std::numeric_limits<std::int64_t>::max(), 100}.offset()),
            std::numeric_limits<std::int64_t>::max());
}

TEST(QueryValidator, ParsesBooleansStrictly) {
  const QueryParams query = {{"live", "true"}, {"isFavourite", "false"}, {"isDefault", "yes"}};
  QueryValidator q(query);
  EXPECT_EQ(q.boolean("live"), true);
  EXPECT_EQ(q.boolean("isFavourite"), false);
  EXPECT_EQ(q.boolean("isDefault"), std::nullopt);
  EXPECT_EQ(q.boolean("absent"), std::nullopt);
  ASSERT_TRUE(q.errors().has_value());
  EXPECT_EQ(*q.errors(), json::parse(R"({"isDefault": {"isBoolean": "isDefault must be a boolean value"}})"));
}

TEST(QueryValidator, ChecksEnumeratedValuesAndIntegers) {
  const QueryParams query = {{"entry", "credit"}, {"status", "lost"}, {"amount", "x"}, {"name", "Main"}};
  QueryValidator q(query);
  EXPECT_EQ(q.one_of("entry", {"credit", "debit"}), "credit");
  EXPECT_EQ(q.one_of("status", {"pending", "processing", "success", "failed"}), std::nullopt);
  EXPECT_EQ(q.integer("amount"), std::nullopt);
  EXPECT_EQ(q.text("name"), "Main");
  EXPECT_EQ(q.text("absent"), std::nullopt);
  EXPECT_EQ(*q.errors(), json::parse(R"({
    "status": {"isIn": "status must be one of the following values: pending, processing, success, failed"},
    "amount": {"isInt": "amount must be an integer number"}})"));
}

}  // namespace
}  // namespace kobo::http

namespace kobo::http {
namespace {

// A body nested deeper than kJsonDepthMax is refused before the parser (which recurses) sees it,
// and quickly: the scan is one pass. Brackets inside strings do not count.
TEST(JsonDepth, DeepNestingIsRefusedBeforeParsingAndFast) {
  const std::string deep = R"({"a":)" + std::string(10'000, '[') + std::string(10'000, ']') + "}";
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(parse_json_object(deep).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(10));

  const auto nested = [](std::size_t depth) {
    return R"({"a":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_TRUE(parse_json_object(nested(kJsonDepthMax)).has_value());
  EXPECT_FALSE(parse_json_object(nested(kJsonDepthMax + 1)).has_value());

  EXPECT_TRUE(json_nesting_within(R"({"a":"[[[[\"[[["})", 1));
  EXPECT_FALSE(json_nesting_within(R"({"a":[{"b":1}]})", 2));
  EXPECT_TRUE(json_nesting_within(R"({"a":[{"b":1}]})", 3));
}

}  // namespace
}  // namespace kobo::http
