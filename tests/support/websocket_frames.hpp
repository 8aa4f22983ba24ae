#pragma once
// WebSocket frames as a test's raw client writes and expects them (RFC 6455 5.2): short
// text messages (under 126 bytes), a client's masked, a server's not, and the handshake.
#include <cstdint>
#include <string>
#include <string_view>

namespace netbox::test {

// Ends a request head as a WebSocket handshake (its key is RFC 6455's example).
inline constexpr std::string_view kWebSocketHandshake =
    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

inline std::string client_text_frame(std::string_view message) {
  const std::string mask = "\x37\xfa\x21\x3d";
  std::string frame = "\x81";
  frame.push_back(static_cast<char>(0x80 | message.size()));
  frame += mask;
  for (std::size_t i = 0; i < message.size(); ++i) frame.push_back(static_cast<char>(message[i] ^ mask[i % 4]));
  return frame;
}

inline std::string server_text_frame(std::string_view message) {
  std::string frame = "\x81";
  frame.push_back(static_cast<char>(message.size()));
  frame += message;
  return frame;
}

// The head of a client's binary message of `length` bytes, in one frame (64-bit length)
// with a zero mask, so the payload that follows goes as written: a large upload streamed
// in pieces. A server reading whole messages (websocket_echo) answers only once it is all there.
inline std::string client_binary_frame_head(std::uint64_t length) {
  std::string head = "\x82\xff";
  for (int shift = 56; shift >= 0; shift -= 8) head.push_back(static_cast<char>((length >> shift) & 0xff));
  return head + std::string(4, '\0');
}

// A client's close, without payload.
inline std::string client_close_frame() { return std::string("\x88\x80\x37\xfa\x21\x3d", 6); }

}  // namespace netbox::test
