# Writes OUT, a C++ file defining `std::string_view NAME()` returning the bytes of IN.
file(READ ${IN} content)
file(WRITE ${OUT} "#include <string_view>\nnamespace sika::app {\nstd::string_view ${NAME}() {\n  static constexpr std::string_view kText = R\"SIKA_EMBED(${content})SIKA_EMBED\";\n  return kText;\n}\n}  // namespace sika::app\n")
