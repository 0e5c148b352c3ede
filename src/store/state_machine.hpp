#pragma once
// The one shape of every entity with a status (docs/architecture.md, "Statuses"; docs/style.md,
// "An entity with a status"): a typed status with its texts, a constexpr table of the legal moves
// and the outbox event each emits, and transition(), which makes the conditional
//   UPDATE <table> SET status = ?, <change.set> WHERE <change.where> AND status = ?
// then the move's consequences and its event, all in the caller's write unit. A move of a row
// that already left `from` writes nothing and returns false: the other actor won the race.
#include <boost/json/object.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::store {

// One legal move and the type of the outbox event it emits ("" when it emits none).
template <class S>
struct Edge {
  S from;
  S to;
  std::string_view event;
};

// An entity's statuses: its table, the text of each status in the enum's order, its legal moves.
template <class S, std::size_t K, std::size_t N>
struct StateMachine {
  std::string_view table;
  std::array<std::string_view, K> names;
  std::array<Edge<S>, N> edges;

  constexpr std::string_view text(S s) const { return names[static_cast<std::size_t>(s)]; }
  constexpr std::optional<S> parse(std::string_view t) const {
    for (std::size_t i = 0; i < K; ++i)
      if (names[i] == t) return static_cast<S>(i);
    return std::nullopt;
  }
  constexpr const Edge<S>* edge(S from, S to) const {
    for (const auto& e : edges)
      if (e.from == from && e.to == to) return &e;
    return nullptr;
  }
  constexpr bool legal(S from, S to) const { return edge(from, to) != nullptr; }
  static constexpr std::size_t size() { return K; }
};

// What a move writes besides the status, and the row(s) it applies to.
struct Change {
  std::string set;  // other assignments, "paid_at = ?, updated_at = ?"; "" for none
  Params set_params;
  std::string where = "id = ?";  // the row(s); the status condition is added to it ("": every row)
  Params where_params;
};

// The outbox event of a move.
struct Event {
  std::optional<std::int64_t> merchant_id;
  std::string subject;
  boost::json::object payload;
  std::int64_t at = 0;
};

// What a move implies in its unit once its row moved: `then` (other rows, counters), then the
// event, built last so that it may read what moved. `event` is required when the move's edge
// has an event, and must be empty otherwise.
struct Effects {
  std::function<Status(Conn&)> then;
  std::function<Result<Event>(Conn&)> event;
};

namespace detail {
// UPDATE table SET status = to[, set] WHERE (where) AND status IN (from...): the rows changed.
Result<std::int64_t> update_status(Conn& c, std::string_view table, std::span<const std::string_view> from,
                                   std::string_view to, const Change& change);
// Runs effects.then, then appends the event of type `event` ("" when the move has none).
Status follow(Conn& c, std::string_view table, std::string_view event, const Effects& effects);
Error illegal(std::string_view table, std::string_view from, std::string_view to);
Error mixed_events(std::string_view table, std::string_view to);
}  // namespace detail

// Moves the row(s) `change` selects from any status of `from` to `to`; true iff a row moved,
// after which effects ran and the event was appended. Every (from, to) must be a legal move with
// the same event; otherwise nothing is written and the answer is a 500 (a bug in the caller).
template <class S, std::size_t K, std::size_t N>
Result<bool> transition(Conn& c, const StateMachine<S, K, N>& m, std::initializer_list<S> from, S to,
                        const Change& change, const Effects& effects = {}) {
  std::array<std::string_view, K> texts{};
  std::size_t n = 0;
  std::optional<std::string_view> event;
  for (S f : from) {
    const Edge<S>* e = m.edge(f, to);
    if (e == nullptr) return detail::illegal(m.table, m.text(f), m.text(to));
    if (event && *event != e->event) return detail::mixed_events(m.table, m.text(to));
    event = e->event;
    if (n < K) texts[n++] = m.text(f);
  }
  if (n == 0) return detail::illegal(m.table, "", m.text(to));
  SIKA_ASSIGN_OR_RETURN(std::int64_t moved, detail::update_status(c, m.table, {texts.data(), n}, m.text(to), change));
  if (moved == 0) return false;
  SIKA_TRY(detail::follow(c, m.table, *event, effects));
  return true;
}

template <class S, std::size_t K, std::size_t N>
Result<bool> transition(Conn& c, const StateMachine<S, K, N>& m, S from, S to, const Change& change,
                        const Effects& effects = {}) {
  return transition(c, m, {from}, to, change, effects);
}

// Moves every row `change` selects whose status is one of `from` to `to` and returns how many
// moved: a bulk move, of edges that emit no event (a 500 otherwise, as is an illegal move).
template <class S, std::size_t K, std::size_t N>
Result<std::int64_t> transition_all(Conn& c, const StateMachine<S, K, N>& m, std::initializer_list<S> from, S to,
                                    const Change& change) {
  std::array<std::string_view, K> texts{};
  std::size_t n = 0;
  for (S f : from) {
    const Edge<S>* e = m.edge(f, to);
    if (e == nullptr) return detail::illegal(m.table, m.text(f), m.text(to));
    if (!e->event.empty()) return detail::mixed_events(m.table, m.text(to));
    if (n < K) texts[n++] = m.text(f);
  }
  return detail::update_status(c, m.table, {texts.data(), n}, m.text(to), change);
}

}  // namespace sika::store
