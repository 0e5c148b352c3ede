#pragma once
// Walks every (from, to) pair of an entity's table of moves (store/state_machine.hpp) on a real
// database: a legal move moves its row once, emits its event once, and the same move again finds
// the row gone from `from` (false, nothing written); an illegal move is refused (500) and writes
// nothing. The rows live in a scratch table of the same shape (id, status, updated_at), so the
// walk needs none of the entity's foreign keys.
#include <gtest/gtest.h>

#include <string>

#include "store/db.hpp"
#include "store/state_machine.hpp"

namespace sika::testing {

inline void create_walk_table(store::Db& db) {
  auto st = db.write([](store::Conn& c) -> Status {
    SIKA_TRY(
        c.exec("CREATE TABLE IF NOT EXISTS sm_walk (id BIGINT PRIMARY KEY, status TEXT NOT NULL, "
               "updated_at BIGINT NOT NULL)"));
    return {};
  });
  ASSERT_TRUE(st.ok()) << st.error().code;
}

// Reads the walk row's status and how many events its subject has.
inline std::pair<std::string, std::int64_t> walk_row(store::Db& db, std::int64_t id) {
  std::pair<std::string, std::int64_t> out;
  auto st = db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT status FROM sm_walk WHERE id = ?", {id}));
    SIKA_ASSIGN_OR_RETURN(auto n,
                          c.query_one("SELECT COUNT(*) FROM events WHERE subject = ?", {"walk-" + std::to_string(id)}));
    out = {row ? row->str(0) : "", n ? n->i64(0) : 0};
    return {};
  });
  EXPECT_TRUE(st.ok());
  return out;
}

template <class S, std::size_t K, std::size_t N>
void walk_every_move(store::Db& db, store::StateMachine<S, K, N> machine) {
  create_walk_table(db);
  const std::string_view table = machine.table;
  machine.table = "sm_walk";
  int legal_moves = 0;
  for (std::size_t f = 0; f < K; ++f) {
    for (std::size_t t = 0; t < K; ++t) {
      const S from = static_cast<S>(f), to = static_cast<S>(t);
      const std::int64_t id = static_cast<std::int64_t>(f * K + t + 1);
      const std::string what =
          std::string(table) + " " + std::string(machine.text(from)) + " -> " + std::string(machine.text(to));
      const auto* edge = machine.edge(from, to);
      ASSERT_TRUE(db.write([&](store::Conn& c) -> Status {
                      SIKA_TRY(c.exec("INSERT INTO sm_walk (id, status, updated_at) VALUES (?, ?, 0)",
                                      {id, std::string(machine.text(from))}));
                      return {};
                    }).ok());
      store::Effects effects;
      if (edge != nullptr && !edge->event.empty())
        effects.event = [id](store::Conn&) -> Result<store::Event> {
          return store::Event{std::nullopt, "walk-" + std::to_string(id), boost::json::object{{"id", id}}, 1};
        };
      auto move = [&]() {
        bool moved = false;
        auto st = db.write([&](store::Conn& c) -> Status {
          SIKA_ASSIGN_OR_RETURN(
              moved, store::transition(c, machine, from, to, {"updated_at = ?", {id}, "id = ?", {id}}, effects));
          return {};
        });
        return st.ok() ? Result<bool>(moved) : Result<bool>(st.take_error());
      };
      auto first = move();
      if (edge == nullptr) {
        ASSERT_FALSE(first.ok()) << what << " must be refused";
        EXPECT_EQ(first.error().kind, ErrorKind::internal) << what;
        EXPECT_EQ(walk_row(db, id), std::make_pair(std::string(machine.text(from)), std::int64_t{0})) << what;
        continue;
      }
      ++legal_moves;
      ASSERT_TRUE(first.ok()) << what << ": " << first.error().code;
      EXPECT_TRUE(*first) << what;
      const std::int64_t events = edge->event.empty() ? 0 : 1;
      EXPECT_EQ(walk_row(db, id), std::make_pair(std::string(machine.text(to)), events)) << what;
      if (from == to) continue;  // a move that keeps its status is decided by the caller's other conditions
      auto second = move();
      ASSERT_TRUE(second.ok()) << what;
      EXPECT_FALSE(*second) << what << ": the same move again must lose";
      EXPECT_EQ(walk_row(db, id), std::make_pair(std::string(machine.text(to)), events)) << what;
    }
  }
  EXPECT_EQ(legal_moves, static_cast<int>(N)) << table << ": every edge of the table was walked";
}

}  // namespace sika::testing
