#pragma once
// Bodies are relayed in pieces of at most 64 KiB, both ways, through one buffer per agent
// connection; each piece goes out in one gather write: [head] [chunk size] bytes [tail].
#include "http/head_writer.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace netbox::proxy {

// Allocated at the first body (request or response), so an idle connection costs no
// 64 KiB. A request body is relayed whole before the response is read: one buffer
// serves both.
class PieceBuffer {
 public:
  static constexpr std::size_t kSize = 64 * 1024;
  char* get() {
    if (!buf_) buf_ = std::make_unique_for_overwrite<char[]>(kSize);
    return buf_.get();
  }

 private:
  std::unique_ptr<char[]> buf_;
};

// Frames `got` body bytes going out after whatever `out` holds (a head, or nothing):
// appends their chunk-size line to `out` when `chunked`, and returns what follows the
// bytes. An empty piece is never a chunk of its own, where it would read as the last
// one; the piece that ends the body (`last`) closes a chunked body.
inline std::string_view frame_piece(std::string& out, bool chunked, std::size_t got, bool last) {
  if (!chunked) return {};
  if (got > 0) append_chunk_size(out, got);
  return got > 0 ? (last ? "\r\n0\r\n\r\n" : "\r\n") : (last ? "0\r\n\r\n" : "");
}

}  // namespace netbox::proxy
