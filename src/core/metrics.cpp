#include "core/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace sika::metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) {
  std::size_t i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<std::uint64_t> Histogram::counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> size_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}; }

namespace {

bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// {a="x",b="y\"z"}, or "" without labels.
std::string label_text(const Labels& labels, std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return {};
  std::string out = "{";
  auto add = [&out](std::string_view k, std::string_view v) {
    if (out.size() > 1) out.push_back(',');
    out.append(k);
    out += "=\"";
    for (char c : v) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '"')
        out += "\\\"";
      else if (c == '\n')
        out += "\\n";
      else
        out.push_back(c);
    }
    out.push_back('"');
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (!extra_name.empty()) add(extra_name, extra_value);
  out.push_back('}');
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

}  // namespace

Registry::Series& Registry::series(std::string_view name, std::string_view help, Kind kind, const Labels& labels) {
  if (!valid_name(name)) throw std::logic_error("metrics: invalid name " + std::string(name));
  for (const auto& [k, v] : labels)
    if (!valid_name(k) || k == "le") throw std::logic_error("metrics: invalid label name " + k);
  auto it = families_.find(name);
  if (it == families_.end()) it = families_.emplace(std::string(name), Family{kind, std::string(help), {}}).first;
  if (it->second.kind != kind) throw std::logic_error("metrics: " + std::string(name) + " has another kind");
  std::string key = label_text(labels);
  auto s = it->second.series.find(key);
  if (s == it->second.series.end()) s = it->second.series.emplace(key, Series{labels, nullptr, nullptr, nullptr}).first;
  return s->second;
}

Counter& Registry::counter(std::string_view name, std::string_view help, const Labels& labels) {
  sika::MutexLock lock(mu_);
  Series& s = series(name, help, Kind::counter, labels);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
  sika::MutexLock lock(mu_);
  Series& s = series(name, help, Kind::gauge, labels);
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Registry::histogram(std::string_view name, std::string_view help, const std::vector<double>& bounds,
                               const Labels& labels) {
  sika::MutexLock lock(mu_);
  Series& s = series(name, help, Kind::histogram, labels);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(bounds);
  return *s.histogram;
}

void Registry::on_scrape(std::function<void()> collect) {
  sika::MutexLock lock(collect_mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::render() {
  {
    sika::MutexLock lock(collect_mu_);
    for (const auto& c : collectors_) c();
  }
  sika::MutexLock lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    static constexpr std::string_view kKinds[] = {"counter", "gauge", "histogram"};
    out += "# HELP " + name + " ";
    for (char c : f.help) out += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
    out += "\n# TYPE " + name + " " + std::string(kKinds[static_cast<int>(f.kind)]) + "\n";
    for (const auto& [labels, s] : f.series) {
      if (s.counter) out += name + labels + " " + std::to_string(s.counter->value()) + "\n";
      if (s.gauge) out += name + labels + " " + number(s.gauge->value()) + "\n";
      if (s.histogram) {
        auto counts = s.histogram->counts();
        const auto& bounds = s.histogram->bounds();
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          std::string le = i < bounds.size() ? number(bounds[i]) : "+Inf";
          out += name + "_bucket" + label_text(s.labels, "le", le) + " " + std::to_string(cumulative) + "\n";
        }
        out += name + "_sum" + labels + " " + number(s.histogram->sum()) + "\n";
        out += name + "_count" + labels + " " + std::to_string(cumulative) + "\n";
      }
    }
  }
  return out;
}

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may update metrics during exit
  return *r;
}

}  // namespace sika::metrics
