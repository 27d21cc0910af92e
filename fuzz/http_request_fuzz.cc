// Raw bytes as a client's side of one connection: Beast's request parser with the server's
// limits, the server's target parse, then the router and the handlers of `kobo serve` against a
// real data dir (fuzz/service.h). Pipelined requests in one input are answered in order, as the
// server does; anything the server would answer 400/413/431 ends the connection.

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/service.h"

namespace bhttp = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const kobo::http::ServerOptions limits;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (int requests = 0; requests < 8 && !input.empty(); ++requests) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(limits.body_limit);
    parser.header_limit(static_cast<std::uint32_t>(limits.header_limit));
    parser.eager(true);
    boost::beast::error_code ec;
    const std::size_t used = parser.put(boost::asio::buffer(input.data(), input.size()), ec);
    if (ec == bhttp::error::need_more) parser.put_eof(ec);  // the client closed its side
    if (ec || !parser.is_done()) return 0;
    input.remove_prefix(used);
    auto message = parser.release();
    kobo::http::Request req;
    req.method = message.method();
    if (!kobo::http::parse_target(message.target(), req)) return 0;
    req.headers = std::move(static_cast<bhttp::fields&>(message));
    req.body = std::move(message.body());
    (void)kobo::fuzz::call(std::move(req));
  }
  return 0;
}
