#pragma once
// The one way a page says something in French and English: a per-page constexpr table of
// {key, fr, en} entries, looked up by key. A key used in code is checked when compiling (an
// unknown key does not build); every table registers itself so that a unit test checks every
// entry of every page has both languages.
//
//   constexpr web::texts::Entry kTextsData[] = {{"pay", "Payer", "Pay"}, ...};
//   constexpr auto kTexts = web::texts::table(kTextsData);
//   const web::texts::Enrolled kEnrolled{"links/page", kTexts};
//   using Key = web::texts::Key<kTexts>;
//   std::string_view t(i18n::Locale l, Key k) { return kTexts.pick(k, l); }   // t(l, "pay")
#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"

namespace sika::web::texts {

struct Entry {
  std::string_view key, fr, en;
};

// "" when every entry has a key, both languages and a key of its own; else a faulty key (or
// "(empty key)"). Keys are told apart by sorting them (n log n steps), so that a long page's
// table stays within a compiler's constant-evaluation limit.
constexpr std::string_view first_incomplete(std::span<const Entry> entries) {
  std::vector<std::string_view> keys;
  keys.reserve(entries.size());
  for (const Entry& e : entries) {
    if (e.key.empty()) return "(empty key)";
    if (e.fr.empty() || e.en.empty()) return e.key;
    keys.push_back(e.key);
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (keys[i] == keys[i - 1]) return keys[i];
  return {};
}

template <std::size_t N>
struct Table {
  Entry entries[N];

  constexpr std::size_t size() const { return N; }
  // The index of `key`; N when absent.
  constexpr std::size_t find(std::string_view key) const {
    for (std::size_t i = 0; i < N; ++i)
      if (entries[i].key == key) return i;
    return N;
  }
  constexpr std::string_view pick(std::size_t index, i18n::Locale l) const {
    return l == i18n::Locale::fr ? entries[index].fr : entries[index].en;
  }
  // For keys made at run time (e.g. "scope_" + a scope name): the text, or `key` itself when
  // the table has none.
  constexpr std::string_view lookup(std::string_view key, i18n::Locale l) const {
    const std::size_t i = find(key);
    return i == N ? key : pick(i, l);
  }
  constexpr std::span<const Entry> all() const { return {entries, N}; }
};

// A table from constexpr entries; does not compile when an entry lacks a language or a key
// appears twice.
template <std::size_t N>
consteval Table<N> table(const Entry (&entries)[N]) {
  Table<N> t{};
  for (std::size_t i = 0; i < N; ++i) t.entries[i] = entries[i];
  if (!first_incomplete(t.all()).empty()) throw "a text lacks a language, or a key appears twice";
  return t;
}

// A key of table `T`, checked when compiling: Key<kTexts>("pay") does not build when kTexts has
// no "pay".
template <const auto& T>
struct Key {
  std::size_t index;
  consteval Key(const char* key) : index(T.find(key)) {  // NOLINT(google-explicit-constructor)
    if (index == T.size()) throw "unknown text key";
  }
  constexpr std::string_view in(i18n::Locale l) const { return T.pick(index, l); }
};

// How a page says its texts: Words<kTexts>{locale}("pay") is the text of "pay" in the page's
// language, as a C string (every entry is a string literal), so that it joins string expressions.
template <const auto& T>
struct Words {
  i18n::Locale locale;
  const char* operator()(Key<T> key) const { return key.in(locale).data(); }
};

// The tables of every page linked into the program, by name.
struct Registered {
  std::string_view name;
  std::span<const Entry> entries;
};
const std::vector<Registered>& registered();

// Registers a table (a namespace-scope object of the page's file).
class Enrolled {
 public:
  template <std::size_t N>
  Enrolled(std::string_view name, const Table<N>& table) {
    enroll(name, table.all());
  }

 private:
  static void enroll(std::string_view name, std::span<const Entry> entries);
};

}  // namespace sika::web::texts
