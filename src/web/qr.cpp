#include "web/qr.hpp"

#include <qrencode.h>
#include <zlib.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace sika::web {

namespace {

constexpr int kQuiet = 4;  // modules of white border the standard asks for

// The code's modules (true = dark), row by row, with the quiet zone included.
struct Modules {
  int size = 0;  // modules per side, quiet zone included
  std::vector<bool> dark;
};

Result<Modules> encode(std::string_view text) {
  if (text.empty()) return empty_data(boost::json::string("nothing to encode"));
  std::string s(text);
  std::unique_ptr<QRcode, void (*)(QRcode*)> code(QRcode_encodeString8bit(s.c_str(), 0, QR_ECLEVEL_M), QRcode_free);
  if (!code) return internal_error(boost::json::string("the QR code could not be encoded"));
  Modules m;
  m.size = code->width + 2 * kQuiet;
  m.dark.assign(static_cast<std::size_t>(m.size) * m.size, false);
  for (int y = 0; y < code->width; ++y)
    for (int x = 0; x < code->width; ++x)
      m.dark[static_cast<std::size_t>(y + kQuiet) * m.size + x + kQuiet] = (code->data[y * code->width + x] & 1) != 0;
  return m;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, static_cast<std::uint32_t>(
                   crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

}  // namespace

Result<std::string> qr_svg(std::string_view text, int module_px) {
  SIKA_ASSIGN_OR_RETURN(Modules m, encode(text));
  const int side = m.size * module_px;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(side) + "\" height=\"" +
                    std::to_string(side) + "\" viewBox=\"0 0 " + std::to_string(m.size) + " " + std::to_string(m.size) +
                    "\" shape-rendering=\"crispEdges\">"
                    "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><path fill=\"#000\" d=\"";
  for (int y = 0; y < m.size; ++y)
    for (int x = 0; x < m.size; ++x)
      if (m.dark[static_cast<std::size_t>(y) * m.size + x])
        out += "M" + std::to_string(x) + " " + std::to_string(y) + "h1v1h-1z";
  out += "\"/></svg>\n";
  return out;
}

Result<std::string> qr_png(std::string_view text, int module_px) {
  SIKA_ASSIGN_OR_RETURN(Modules m, encode(text));
  const std::uint32_t side = static_cast<std::uint32_t>(m.size * module_px);
  // Raw scanlines: a filter byte (0, none) then one gray byte per pixel.
  std::string raw;
  raw.reserve(static_cast<std::size_t>(side) * (side + 1));
  for (std::uint32_t py = 0; py < side; ++py) {
    raw.push_back(0);
    const std::size_t row = static_cast<std::size_t>(py / module_px) * m.size;
    for (std::uint32_t px = 0; px < side; ++px) raw.push_back(m.dark[row + px / module_px] ? '\x00' : '\xFF');
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
    return internal_error(boost::json::string("the PNG could not be compressed"));
  packed.resize(packed_size);

  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_u32(ihdr, side);
  put_u32(ihdr, side);
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // 8-bit depth, grayscale, deflate, no filter set, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", packed);
  chunk(png, "IEND", "");
  return png;
}

}  // namespace sika::web
