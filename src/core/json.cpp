#include "core/json.hpp"

#include "core/reason.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include <charconv>
#include <cmath>
#include <unordered_set>
#include <vector>

namespace sika::json {

namespace {

// A basic_parser handler that builds the value like boost::json::parser does, but remembers the
// keys of every open object so that a repeated key is seen before the object collapses it, and
// looks at every string and key for NUL characters (PostgreSQL cannot store them in text; SQLite
// would store them and truncate them in C APIs).
class StrictHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  bj::value_stack stack;
  std::optional<Reason> problem;  // set when the handler refused the document
  std::string field;              // where

  bool on_document_begin(boost::system::error_code&) {
    stack.reset();
    return true;
  }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code&) {
    frames_.push_back(Frame{false, {}, {}, 0});
    return true;
  }
  bool on_array_end(std::size_t n, boost::system::error_code&) {
    frames_.pop_back();
    stack.push_array(n);
    return value_done();
  }
  bool on_object_begin(boost::system::error_code&) {
    frames_.push_back(Frame{true, {}, {}, 0});
    return true;
  }
  bool on_object_end(std::size_t n, boost::system::error_code&) {
    frames_.pop_back();
    stack.push_object(n);
    return value_done();
  }
  bool on_string_part(bj::string_view s, std::size_t, boost::system::error_code& ec) {
    if (has_nul(s)) return refuse(ec, Reason::nul_character);
    stack.push_chars(s);
    return true;
  }
  bool on_string(bj::string_view s, std::size_t, boost::system::error_code& ec) {
    if (has_nul(s)) return refuse(ec, Reason::nul_character);
    stack.push_string(s);
    return value_done();
  }
  bool on_key_part(bj::string_view s, std::size_t, boost::system::error_code&) {
    key_.append(s.data(), s.size());
    stack.push_chars(s);
    return true;
  }
  bool on_key(bj::string_view s, std::size_t, boost::system::error_code& ec) {
    key_.append(s.data(), s.size());
    Frame& f = frames_.back();
    if (has_nul(key_)) {
      key_.clear();
      return refuse(ec, Reason::key_nul_character);
    }
    f.key = std::move(key_);
    key_.clear();
    if (!f.keys.insert(f.key).second) return refuse(ec, Reason::duplicate_key);
    stack.push_key(s);
    return true;
  }
  bool on_number_part(bj::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t i, bj::string_view, boost::system::error_code&) {
    stack.push_int64(i);
    return value_done();
  }
  bool on_uint64(std::uint64_t u, bj::string_view, boost::system::error_code&) {
    stack.push_uint64(u);
    return value_done();
  }
  bool on_double(double d, bj::string_view, boost::system::error_code&) {
    stack.push_double(d);
    return value_done();
  }
  bool on_bool(bool b, boost::system::error_code&) {
    stack.push_bool(b);
    return value_done();
  }
  bool on_null(boost::system::error_code&) {
    stack.push_null();
    return value_done();
  }
  bool on_comment_part(bj::string_view, boost::system::error_code&) { return true; }
  bool on_comment(bj::string_view, boost::system::error_code&) { return true; }

 private:
  struct Frame {
    bool object;
    std::unordered_set<std::string> keys;  // objects: every key seen so far
    std::string key;                       // objects: the member being read
    std::size_t index;                     // arrays: the element being read
  };

  static bool has_nul(bj::string_view s) { return s.find('\0') != bj::string_view::npos; }

  bool value_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  // "a.b[2].c": the member or element being read.
  std::string path() const {
    std::string out;
    for (const auto& f : frames_) {
      if (f.object) {
        if (!out.empty()) out.push_back('.');
        out += f.key;
      } else {
        out += "[" + std::to_string(f.index) + "]";
      }
    }
    return out;
  }

  bool refuse(boost::system::error_code& ec, Reason what) {
    problem = what;
    field = path();
    ec = bj::error::syntax;
    return false;
  }

  std::vector<Frame> frames_;
  std::string key_;
};

}  // namespace

Result<bj::value> parse(std::string_view text) {
  bj::parse_options opts;
  opts.max_depth = 64;
  bj::basic_parser<StrictHandler> p(opts);
  boost::system::error_code ec;
  std::size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (!ec && n < text.size()) ec = bj::error::extra_data;
  if (ec) {
    const StrictHandler& h = p.handler();
    if (!h.problem) return field_error("", reason::with(Reason::malformed_json, "cause", ec.message()));
    return field_error(h.field.empty() ? std::string("body") : h.field, *h.problem);
  }
  return p.handler().stack.release();
}

Result<bj::object> parse_object(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return field_error("", Reason::body_empty);
  auto v = parse(text);
  if (!v) return v.take_error();
  if (!v->is_object()) return field_error("", Reason::body_not_object);
  return std::move(v->as_object());
}

namespace {

void write_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of characters that need no escape
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

template <class T>
void write_number(T n, std::string& out) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

}  // namespace

void dump_string_to(std::string_view s, std::string& out) { write_string(s, out); }

void dump_to(const bj::value& v, std::string& out) {
  switch (v.kind()) {
    case bj::kind::null: out += "null"; break;
    case bj::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case bj::kind::int64: write_number(v.get_int64(), out); break;
    case bj::kind::uint64: write_number(v.get_uint64(), out); break;
    case bj::kind::double_:
      // std::to_chars without a format picks the shortest exact form, fixed on a tie: 3, 0.25, 1e+21.
      if (std::isfinite(v.get_double()))
        write_number(v.get_double(), out);
      else
        out += "null";
      break;
    case bj::kind::string: write_string(v.get_string(), out); break;
    case bj::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        dump_to(e, out);
      }
      out.push_back(']');
      break;
    }
    case bj::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        write_string(kv.key(), out);
        out.push_back(':');
        dump_to(kv.value(), out);
      }
      out.push_back('}');
      break;
    }
  }
}

std::string dump(const bj::value& v) {
  std::string out;
  out.reserve(256);
  dump_to(v, out);
  return out;
}

void FieldErrors::add(std::string_view field, Problem problem) {
  if (details_.contains(field)) return;
  details_[field] = reason::text(problem, i18n::Locale::en);
  problems_.push_back(FieldProblem{std::string(field), std::move(problem)});
}

void FieldErrors::add_all(std::string_view prefix, const FieldErrors& other) {
  for (const auto& p : other.problems_) add(std::string(prefix) + p.field, p.problem);
}

void FieldErrors::add_error(const Error& e, std::string_view field) {
  if (!e.problems.empty()) {
    for (const auto& p : e.problems) add(p.field.empty() ? std::string(field) : p.field, p.problem);
  } else if (e.details.is_object()) {
    for (const auto& kv : e.details.as_object())
      add(kv.key(), kv.value().is_string() ? Problem(reason::untyped(std::string(kv.value().as_string())))
                                           : Problem(Reason::invalid));
  } else if (e.details.is_string()) {
    add(field, reason::untyped(std::string(e.details.as_string())));
  } else {
    add(field, Reason::invalid);
  }
}

Status FieldErrors::status() const {
  if (problems_.empty()) return {};
  Error e = empty_data(details_);
  e.problems = problems_;
  return e;
}

namespace {
const bj::value* present(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) {
    if (required) errors.add(key, Reason::required);
    return nullptr;
  }
  return &it->value();
}
}  // namespace

std::optional<std::string> get_string(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    errors.add(key, Reason::not_string);
    return std::nullopt;
  }
  return std::string(v->get_string());
}

std::optional<std::int64_t> get_int(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) {
    if (v->get_uint64() > static_cast<std::uint64_t>(INT64_MAX)) {
      errors.add(key, Reason::too_large);
      return std::nullopt;
    }
    return static_cast<std::int64_t>(v->get_uint64());
  }
  errors.add(key, Reason::not_integer);
  return std::nullopt;
}

std::optional<double> get_number(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double() && std::isfinite(v->get_double())) return v->get_double();
  errors.add(key, Reason::not_number);
  return std::nullopt;
}

std::optional<bool> get_bool(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    errors.add(key, Reason::not_boolean);
    return std::nullopt;
  }
  return v->get_bool();
}

const bj::object* get_object(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return nullptr;
  if (!v->is_object()) {
    errors.add(key, Reason::not_object);
    return nullptr;
  }
  return &v->get_object();
}

const bj::array* get_array(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return nullptr;
  if (!v->is_array()) {
    errors.add(key, Reason::not_array);
    return nullptr;
  }
  return &v->get_array();
}

std::optional<std::string> number_text(const bj::value& v) {
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (!v.is_double()) return std::nullopt;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
  if (ec != std::errc()) return std::nullopt;
  return std::string(buf, end);
}

}  // namespace sika::json
