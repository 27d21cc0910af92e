#include "query-api/transfer_requests.h"

#include "common/crypto.h"
#include "common/json_writer.h"
#include "query-api/answer.h"

namespace kobo::api {

using nlohmann::json;

void check_wallet_transfer(http::Validator& v) {
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("sourceType").is_not_empty().is_string().is_in({"VirtualAccount"});
  v.field("destination").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("destinationType").is_not_empty().is_string().is_in({"VirtualAccount"});
  v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("nameEnquiryRef").is_string().max_length(kTextLengthMax);
}

void check_bank_transfer(http::Validator& v) {
  v.field("source").is_not_empty().is_string().max_length(kTextLengthMax);
  v.field("accountNumber").is_not_empty().is_string().max_length(32);
  v.field("bankCode").is_not_empty().is_string().max_length(16);
  v.field("amount").is_int().min(kTransferMin).max(kTransferMax);
  v.field("currency").is_not_empty().is_string().is_in({"NGN"});
  v.field("narration").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("reference").is_not_empty().is_string().max_length(kTextLengthMax);
  v.optional("saveBeneficiary").is_boolean();
  v.optional("metadata").is_object().max_json_size(kMetadataBytesMax);
}

WalletTransfer wallet_transfer_of(const Caller& caller, const json& body) {
  WalletTransfer cmd;
  cmd.caller = caller;
  cmd.source = body.at("source");
  cmd.destination = body.at("destination");
  cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.narration = body.at("narration");
  if (auto r = optional_string(body, "reference")) cmd.reference = *r;
  if (auto r = optional_string(body, "nameEnquiryRef")) cmd.name_enquiry_ref = *r;
  return cmd;
}

BankTransfer bank_transfer_of(const Caller& caller, const json& body, const ResolvedAccount* to) {
  BankTransfer cmd;
  cmd.caller = caller;
  cmd.source = body.at("source");
  if (to != nullptr) {
    cmd.bank_account_id = bank_account_id(caller.business, caller.live, to->bank_code, to->account_number);
    cmd.account_number = to->account_number;
    cmd.account_name = to->account_name;
    cmd.bank_code = to->bank_code;
    cmd.bank_name = to->bank_name;
    cmd.name_enquiry_ref = "ner-" + uuid_v4();
  } else {
    cmd.account_number = body.at("accountNumber");
    cmd.bank_code = body.at("bankCode");
  }
  cmd.amount = Kobo(*http::as_int64(body.at("amount")));
  cmd.narration = body.at("narration");
  if (auto ref = optional_string(body, "reference")) cmd.reference = *ref;
  cmd.save_beneficiary =
      body.value("saveBeneficiary", json(false)).is_boolean() && body.value("saveBeneficiary", false);
  if (body.contains("metadata") && body.at("metadata").is_object())
    cmd.metadata = RawJson{json_text(body.at("metadata"))};
  return cmd;
}

}  // namespace kobo::api
