#pragma once
// QR codes of payment links: web/qr.hpp (libqrencode), as SVG and PNG for printing.
#include "web/qr.hpp"

namespace sika::links {

using web::qr_png;
using web::qr_svg;

}  // namespace sika::links
