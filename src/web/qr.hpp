#pragma once
// QR codes (libqrencode), as SVG and PNG: payment links, a redirect operator's link on the confirmation page.
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace sika::web {

// An SVG image of the QR code of `text` (error correction M, a 4-module quiet zone), each
// module `module_px` user units wide.
Result<std::string> qr_svg(std::string_view text, int module_px = 8);
// A PNG image (8-bit grayscale, black on white) of the same code.
Result<std::string> qr_png(std::string_view text, int module_px = 8);

}  // namespace sika::web
