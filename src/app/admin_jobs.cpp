// `sika admin` commands of the leased jobs (store/jobs.hpp): what is queued, running, done or
// dead, and a retry for dead jobs once their cause is fixed.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "store/jobs.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

bj::value opt_json(const std::optional<std::string>& v) { return v ? bj::value(bj::string(*v)) : bj::value(nullptr); }
bj::value opt_json(const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); }

bj::object job_json(const store::JobInfo& j) {
  return {{"id", j.id},
          {"queue", j.queue},
          {"key", j.key},
          {"state", j.state},
          {"attempts", j.attempts},
          {"max_attempts", j.max_attempts},
          {"run_at", j.run_at},
          {"lease_owner", opt_json(j.lease_owner)},
          {"lease_until", opt_json(j.lease_until)},
          {"heartbeat_at", opt_json(j.heartbeat_at)},
          {"last_error", opt_json(j.last_error)},
          {"finished_at", opt_json(j.finished_at)}};
}

}  // namespace

void add_jobs_admin(CLI::App& admin, AdminEnv& env) {
  {
    auto* cmd = add_command(admin, env, "list-jobs", "List leased jobs, newest first");
    auto filter = std::make_shared<store::JobFilter>();
    cmd->add_option("--queue", filter->queue, "only this queue (job kind)");
    cmd->add_option("--state", filter->state, "only this state")
        ->check(CLI::IsMember({"pending", "running", "done", "dead"}));
    cmd->add_option("--limit", filter->limit, "most jobs listed (default 100)")->check(CLI::Range(1, 10'000));
    cmd->callback([&env, filter] {
      Context& ctx = env.context();
      auto jobs = check(store::list_jobs(*ctx.db, *filter));
      bj::array out;
      std::string human;
      for (const auto& j : jobs) {
        out.push_back(job_json(j));
        human += std::to_string(j.id) + "\t" + j.queue + "\t" + j.key + "\t" + j.state + "\t" +
                 std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts) + "\t" + j.last_error.value_or("") +
                 "\n";
      }
      print_result(env, out, human.empty() ? "no jobs" : human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "retry-job", "Run a dead job again (its attempts start from zero)");
    auto queue = std::make_shared<std::string>();
    auto key = std::make_shared<std::string>();
    cmd->add_option("--queue", *queue, "the job's queue")->required();
    cmd->add_option("--key", *key, "the job's key")->required();
    cmd->callback([&env, queue, key] {
      Context& ctx = env.context();
      if (!check(store::retry_dead(*ctx.db, *queue, *key, now_ms())))
        fail(not_found(bj::object{{"job", "no dead job " + *queue + " / " + *key}}));
      print_result(env, {{"queue", *queue}, {"key", *key}, {"state", "pending"}}, "queued again");
    });
  }
}

}  // namespace sika::app
