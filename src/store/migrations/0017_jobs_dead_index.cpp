#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Dead jobs are counted per queue at every metrics scrape (sika_jobs{state="dead"}): a partial
// index keeps that count proportional to the dead jobs, not to the whole history of done ones.
extern const Migration k0017JobsDeadIndex{17, "jobs_dead_index", R"SQL(
CREATE INDEX jobs_dead ON jobs(queue) WHERE state = 'dead'
)SQL"};

}  // namespace sika::store::migrations
