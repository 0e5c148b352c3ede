# Writes OUT, a C++ file defining sika::catalog::demo_catalog_json() returning the bytes of IN.
file(READ ${IN} content)
file(WRITE ${OUT} "#include <string_view>\nnamespace sika::catalog {\nstd::string_view demo_catalog_json() {\n  static constexpr std::string_view kText = R\"SIKA_EMBED(${content})SIKA_EMBED\";\n  return kText;\n}\n}  // namespace sika::catalog\n")
