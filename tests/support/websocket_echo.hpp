#pragma once
// A real WebSocket endpoint for the test upstreams (Beast's websocket stream): a
// handshake request already read (`req`) is accepted on `stream`, and every message the
// client sends is sent back, until it closes. Bounded by the stream's socket timeouts.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>


namespace netbox::test {

// The caller keeps `stream` (and closes it after).
template <class Stream>
void websocket_echo(Stream& stream, const boost::beast::http::request<boost::beast::http::string_body>& req) {
  namespace websocket = boost::beast::websocket;
  websocket::stream<Stream&> ws(stream);
  boost::beast::error_code ec;
  ws.accept(req, ec);
  while (!ec) {
    boost::beast::flat_buffer message;
    ws.read(message, ec);
    if (ec) break;
    ws.text(ws.got_text());
    ws.write(message.data(), ec);
  }
}

}  // namespace netbox::test
