/*
 * sched/fairmatch: the C side of the plugin, for Slurm 22.05.
 *
 * Shaped like Slurm's backfill_wrapper.c: init starts an agent thread,
 * fini stops it, reconfig only flags it. Each cycle of the agent:
 *
 *  1. reloads fairmatch.conf if asked to, with no lock held;
 *  2. under slurmctld's locks, starts the jobs fairmatch does not model
 *     first come first served, reserving nodes for the first one that
 *     cannot start (EASY backfill, with Slurm's own will-run test), and
 *     copies the managed jobs, partitions and nodes into the plain structs
 *     of fairmatch_shim.h;
 *  3. unlocks and calls fairmatch_rs_plan() once;
 *  4. under the locks again, applies each decision all or nothing
 *     (fm_start.c) and then reports every outcome with one call to
 *     fairmatch_rs_observe().
 *
 * Order control: fairmatch is the only thing that starts jobs. It prepends
 * "defer,sched_interval=-1" to SchedulerParameters, so Slurm neither
 * starts jobs at submit time nor runs its main scheduling loop. If the
 * Rust side fails, the managed jobs are started first come first served
 * too, so the cluster keeps working.
 */

#include "fm_slurm.h"

#define REQUIRED_PARAMS "defer,sched_interval=-1"
/* Look again at least this often even when nothing changed, so estimates
 * that ran out are noticed. */
#define MAX_IDLE_SECONDS 5

static pthread_t agent_thread;
static pthread_mutex_t term_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t term_cond = PTHREAD_COND_INITIALIZER;
static bool stop_agent = false;
static bool reload_config = true;

/* The agent thread's own copies of the settings. */
static fm_settings_t settings = { .interval_ms = 500 };
static time_t last_finished_scan = 0;
/* Agent thread only: what the last snapshot saw, and the newest ending
 * the state file is known to hold. */
static fm_watch_t watch = { 0 };
static time_t durable_end = 0;
static uint32_t durable_ended = 0;

/* Copy and apply both need job and node write locks (select_nodes()). */
static const slurmctld_lock_t cycle_locks = {
	.conf = READ_LOCK, .job = WRITE_LOCK, .node = WRITE_LOCK,
	.part = READ_LOCK, .fed = READ_LOCK,
};

void fairmatch_shim_log(int32_t level, const char *message)
{
	switch (level) {
	case 1:
		error("fairmatch: %s", message);
		break;
	case 2:
		info("fairmatch: warning: %s", message);
		break;
	case 3:
		info("fairmatch: %s", message);
		break;
	case 4:
		debug("fairmatch: %s", message);
		break;
	default:
		debug2("fairmatch: %s", message);
	}
}

double fm_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

bool fm_manages(const char *partition)
{
	if (!settings.partitions[0])
		return true;
	if (!partition)
		return false;
	size_t n = strlen(partition);
	for (const char *p = settings.partitions; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t) (end - p) : strlen(p);
		if (len == n && !strncmp(p, partition, n))
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

/* Slurm must not start jobs behind fairmatch's back. Prepending wins over
 * any later value, since Slurm parses the first occurrence. Runs under
 * slurmctld's config lock (init and reconfigure hold it). */
static void _ensure_sched_params(void)
{
	char *params = slurm_conf.sched_params;
	if (xstrcasestr(params, "defer") &&
	    xstrcasestr(params, "sched_interval=-1"))
		return;
	char *updated = NULL;
	if (params && params[0])
		xstrfmtcat(updated, "%s,%s", REQUIRED_PARAMS, params);
	else
		updated = xstrdup(REQUIRED_PARAMS);
	info("fairmatch: SchedulerParameters=%s (fairmatch starts jobs itself)",
	     updated);
	xfree(slurm_conf.sched_params);
	slurm_conf.sched_params = updated;
	slurm_conf.last_update = time(NULL);
}

/* Reads fairmatch.conf with no slurmctld lock held but the config read
 * lock for slurm.conf's path. */
/* A listed partition slurm.conf does not define is reported; its name
 * matches no job, so fairmatch manages the others and jobs of every other
 * partition are started first come first served, as unmanaged ones. */
static void _check_partitions(const char *slurm_conf_path)
{
	slurmctld_lock_t part_read = { .part = READ_LOCK };
	int listed = 0, found = 0;
	char *names = xstrdup(settings.partitions), *save = NULL;
	lock_slurmctld(part_read);
	for (char *p = strtok_r(names, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		listed++;
		if (find_part_record(p))
			found++;
		else
			error("fairmatch: Partitions= names '%s', which %s does not define; managing the others",
			      p, slurm_conf_path);
	}
	unlock_slurmctld(part_read);
	xfree(names);
	if (listed && !found)
		error("fairmatch: no partition of Partitions= exists; every job is started first come first served with backfill");
}

static void _load_config(void)
{
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	lock_slurmctld(conf_read);
	char *path = xstrdup(slurm_conf.slurm_conf);
	unlock_slurmctld(conf_read);
	fm_settings_t loaded;
	memset(&loaded, 0, sizeof(loaded));
	if (fairmatch_rs_load_config(path, &loaded) == 0)
		settings = loaded;
	if (settings.interval_ms == 0)
		settings.interval_ms = 500;
	_check_partitions(path);
	xfree(path);
}

static bool _scheduling_allowed(void)
{
	return !slurmctld_config.shutdown_time &&
	       !slurmctld_config.scheduling_disabled;
}

static uint32_t _usec_since(struct timeval *start)
{
	struct timeval end;
	gettimeofday(&end, NULL);
	long long us = (end.tv_sec - start->tv_sec) * 1000000LL +
		       (end.tv_usec - start->tv_usec);
	return us < 0 ? 0 : (uint32_t) MIN(us, (long long) UINT32_MAX);
}

/* sdiag: "Main schedule statistics" count fairmatch's cycles and the time
 * they hold slurmctld's locks; "Backfilling stats" the whole cycle,
 * solve included, with the managed queue as its depth. */
static void _record_stats(uint32_t locked_us, uint32_t cycle_us,
			  uint32_t queue_len, uint32_t decided)
{
	diag_stats_t *s = &slurmctld_diag_stats;
	s->schedule_cycle_last = locked_us;
	s->schedule_cycle_max = MAX(s->schedule_cycle_max, locked_us);
	s->schedule_cycle_sum += locked_us;
	s->schedule_cycle_counter++;
	s->schedule_cycle_depth += decided;
	s->schedule_queue_len = queue_len;
	s->bf_active = 0;
	s->bf_cycle_counter++;
	s->bf_cycle_last = cycle_us;
	s->bf_cycle_max = MAX(s->bf_cycle_max, cycle_us);
	s->bf_cycle_sum += cycle_us;
	s->bf_last_depth = queue_len;
	s->bf_depth_sum += queue_len;
	s->bf_queue_len = queue_len;
	s->bf_queue_len_sum += queue_len;
	s->bf_when_last_cycle = time(NULL);
}

/*
 * Writes the job state file now, outside our locks (dump_all_job_state()
 * takes its own), when this cycle allocated batch jobs or jobs ended since
 * the last write; then launches the allocated scripts. Slurm's own save
 * runs at most every 5 s: a start or an ending inside that window is lost
 * if slurmctld dies, and the job then runs again. Started jobs reach the
 * file before their scripts run; endings reach it within one cycle.
 */
static void _make_durable(void)
{
	bool ended = watch.last_end > durable_end ||
		     (watch.last_end == durable_end &&
		      watch.ended_in_last > durable_ended);
	if (!fm_deferred_count() && !ended)
		return;
	struct timeval t;
	gettimeofday(&t, NULL);
	int rc = dump_all_job_state();
	uint32_t dump_us = _usec_since(&t);
	durable_end = watch.last_end;
	durable_ended = watch.ended_in_last;
	if (rc != SLURM_SUCCESS)
		error("fairmatch: saving job state before launch failed: %s",
		      slurm_strerror(rc));
	if (!fm_deferred_count())
		return;
	schedule_node_save();
	lock_slurmctld(cycle_locks);
	size_t launched = fm_launch_deferred();
	unlock_slurmctld(cycle_locks);
	debug("fairmatch: job state saved in %u us, %zu batch scripts launched",
	      dump_us, launched);
}

static void _cycle(void)
{
	fm_snapshot_t snap;
	fm_reservation_t resv = { 0 };
	struct timeval cycle_start, locked_start;
	uint32_t locked_us;

	gettimeofday(&cycle_start, NULL);
	gettimeofday(&locked_start, NULL);
	lock_slurmctld(cycle_locks);
	if (!_scheduling_allowed()) {
		unlock_slurmctld(cycle_locks);
		watch.next_begin = 0;
		return;
	}
	fm_unmanaged_pass(&resv);
	fm_snapshot(&snap, &resv, &last_finished_scan, &watch);
	unlock_slurmctld(cycle_locks);
	locked_us = _usec_since(&locked_start);

	size_t cap = snap.n_pending;
	for (size_t i = 0; i < snap.n_pending; i++)
		cap += snap.pending[i].tasks;
	fm_decision_t *decisions = xcalloc(cap + 1, sizeof(fm_decision_t));
	fm_outcome_t *outcomes = xcalloc(cap + 1, sizeof(fm_outcome_t));
	uint32_t queue_len = snap.n_pending;
	int64_t count = fairmatch_rs_plan(&snap, decisions, cap);
	fm_free_snapshot(&snap);

	size_t n_outcomes = 0;
	gettimeofday(&locked_start, NULL);
	lock_slurmctld(cycle_locks);
	if (_scheduling_allowed()) {
		if (count >= 0)
			n_outcomes = fm_apply(decisions, count, &resv, outcomes);
		else
			fm_fallback();
	}
	locked_us += _usec_since(&locked_start);
	uint32_t cycle_us = _usec_since(&cycle_start);
	/* Still under the job write lock, as Slurm updates these. */
	_record_stats(locked_us, cycle_us, queue_len, n_outcomes);
	unlock_slurmctld(cycle_locks);
	fm_free_reservation(&resv);
	_make_durable();

	if (n_outcomes)
		fairmatch_rs_observe(outcomes, n_outcomes);
	debug("fairmatch: cycle %u us (%u us under slurmctld's locks), %u queued, %zu starts tried",
	      cycle_us, locked_us, queue_len, n_outcomes);
	xfree(decisions);
	xfree(outcomes);
}

static bool _sleep_ms(uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long) (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	slurm_mutex_lock(&term_lock);
	if (!stop_agent && !reload_config)
		slurm_cond_timedwait(&term_cond, &term_lock, &ts);
	bool stop = stop_agent;
	slurm_mutex_unlock(&term_lock);
	return !stop;
}

static void *_agent(void *arg)
{
	time_t seen_job = 0, seen_node = 0, seen_part = 0, last_cycle = 0;
	bool reloaded = false;
	while (_sleep_ms(settings.interval_ms)) {
		slurm_mutex_lock(&term_lock);
		bool reload = reload_config;
		reload_config = false;
		slurm_mutex_unlock(&term_lock);
		if (reload) {
			_load_config();
			reloaded = true;
		}
		time_t now = time(NULL);
		/* The update stamps have one-second resolution: while the
		 * last change is this second or the one before, a newer
		 * change may hide behind an equal stamp, so look anyway. */
		bool recent = difftime(now, last_job_update) <= 1 ||
			      difftime(now, last_node_update) <= 1;
		if (!reloaded && !recent && seen_job == last_job_update &&
		    seen_node == last_node_update &&
		    seen_part == last_part_update &&
		    (!watch.next_begin || now < watch.next_begin) &&
		    difftime(now, last_cycle) < MAX_IDLE_SECONDS)
			continue;
		reloaded = false;
		_cycle();
		/* Our own writes bumped these; do not wake for them. */
		seen_job = last_job_update;
		seen_node = last_node_update;
		seen_part = last_part_update;
		last_cycle = now;
	}
	return NULL;
}

int32_t fairmatch_shim_init(void)
{
	_ensure_sched_params();
	slurm_mutex_lock(&term_lock);
	stop_agent = false;
	reload_config = true;
	slurm_mutex_unlock(&term_lock);
	slurm_thread_create(&agent_thread, _agent, NULL);
	return SLURM_SUCCESS;
}

void fairmatch_shim_fini(void)
{
	slurm_mutex_lock(&term_lock);
	stop_agent = true;
	slurm_cond_signal(&term_cond);
	slurm_mutex_unlock(&term_lock);
	if (agent_thread) {
		pthread_join(agent_thread, NULL);
		agent_thread = 0;
	}
	fairmatch_rs_shutdown();
}

/* Runs with all of slurmctld's write locks held: it must not wait for
 * anything, so it only flags the agent, which rereads fairmatch.conf
 * outside the locks before its next cycle. */
void fairmatch_shim_reconfig(void)
{
	_ensure_sched_params();
	slurm_mutex_lock(&term_lock);
	reload_config = true;
	slurm_cond_signal(&term_cond);
	slurm_mutex_unlock(&term_lock);
}
