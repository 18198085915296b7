/*
 * sched/fairmatch: the C side of the plugin, for Slurm 22.05 to 26.05
 * (fm_compat.h bridges what changed between them).
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
 * Order control: fairmatch starts the jobs. It prepends
 * "sched_interval=-1" to SchedulerParameters (and, from 23.02 on,
 * "defer_batch": see fm_compat.h), so Slurm never runs its main
 * scheduling loop. The one start left to Slurm is its own at submit time:
 * an interactive allocation (salloc, srun) that is the top priority of its
 * partitions and fits on idle resources starts at once, as under
 * backfill, so `--immediate` works; batch jobs never start at submit. If
 * the Rust side fails, the managed jobs are started first come first
 * served too, so the cluster keeps working.
 */

#include "fm_slurm.h"

#define REQUIRED_PARAMS FM_REQUIRED_SCHED_PARAMS
/* Look again at least this often even when nothing changed, so estimates
 * that ran out are noticed. */
#define MAX_IDLE_SECONDS 5
/* While no CPU is free the plan is skipped (_take_snapshot), but it still
 * runs this often, so new jobs get their reasons and notes. */
#define PLAN_AT_LEAST_EVERY 10

static pthread_t agent_thread;
static pthread_mutex_t term_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t term_cond = PTHREAD_COND_INITIALIZER;
static bool stop_agent = false;
static bool reload_config = true;

/* The agent thread's own copies of the settings: Rust's defaults
 * (fairmatch_rs_defaults, set at the first init) until fairmatch.conf is
 * read. */
static fm_settings_t settings;
static time_t last_finished_scan = 0;
/* Agent thread only: what the last snapshot saw, and the newest ending
 * the state file is known to hold. */
static fm_watch_t watch = { 0 };
static time_t durable_end = 0;
/* When the last plan ran, in seconds of CLOCK_MONOTONIC (a wall clock
 * stepped back would stop the PLAN_AT_LEAST_EVERY floor). */
static time_t last_plan = 0;
static uint32_t durable_ended = 0, durable_completing = 0;
/* When the agent last wrote the job state file, and how long it took. */
static struct timeval last_save = { 0 };
static uint32_t last_save_us = 0;

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

/* Slurm's main loop must not start jobs behind fairmatch's back.
 * Prepending wins over any later value, since Slurm parses the first
 * occurrence. Interactive jobs keep Slurm's submit-time start, so
 * --immediate works: from 23.02 on "defer_batch" wins over a site's
 * "defer"; before, a site's "defer" makes --immediate fail, as under
 * backfill. Runs under slurmctld's config lock (init and reconfigure hold
 * it). */
static void _ensure_sched_params(void)
{
	char *params = slurm_conf.sched_params;
	size_t n = strlen(REQUIRED_PARAMS);
	/* Slurm reads the first sched_interval= it finds, so ours must come
	 * first, not merely be somewhere. */
	if (params && !strncasecmp(params, REQUIRED_PARAMS, n) &&
	    (params[n] == '\0' || params[n] == ','))
		return;
	char *updated = xstrdup(REQUIRED_PARAMS);
	char *copy = xstrdup(params ? params : ""), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		/* Ours comes first; a second would only repeat it. */
		if (!xstrcasestr(REQUIRED_PARAMS, "defer_batch") ||
		    xstrcasecmp(t, "defer_batch"))
			xstrfmtcat(updated, ",%s", t);
	xfree(copy);
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
	char *state_dir = xstrdup(slurm_conf.state_save_location);
	fm_set_usage_kept(xstrstr(slurm_conf.priority_type, "multifactor"));
	uint32_t requeue_delay = fm_requeue_delay();
	unlock_slurmctld(conf_read);
	fm_settings_t loaded;
	memset(&loaded, 0, sizeof(loaded));
	if (fairmatch_rs_load_config(path, state_dir ? state_dir : "",
				     requeue_delay, &loaded) == 0)
		settings = loaded;
	if (settings.interval_ms == 0)
		settings.interval_ms = fairmatch_rs_defaults.interval_ms;
	if (settings.hold_ms == 0)
		settings.hold_ms = fairmatch_rs_defaults.hold_ms;
	fm_hold_configure(&settings);
	_check_partitions(path);
	xfree(path);
	xfree(state_dir);
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
 * file before their scripts run; endings, and the ends of their epilogs,
 * reach it within IntervalMs: a cycle that starts nothing saves them only
 * if the last save is that old, as the cycles the agent's event polls add
 * would otherwise write 10,000 records for each ending (the next tick,
 * which comes while the ending's job stamp is recent, saves them).
 */
static uint32_t _make_durable(fm_hold_t *h)
{
	bool ended = watch.last_end > durable_end ||
		     (watch.last_end == durable_end &&
		      watch.ended_in_last > durable_ended) ||
		     watch.completing != durable_completing;
	/* A requeue is saved at once, as a start is: a controller that died
	 * before would restart with the job still running on a node that
	 * killed it. */
	if (!fm_deferred_count() && !fm_requeued_unsaved() &&
	    (!ended || fm_usec_since(&last_save) < settings.interval_ms * 1000U))
		return 0;
	fm_requeues_saved();
	struct timeval t;
	gettimeofday(&t, NULL);
	int rc = dump_all_job_state();
	uint32_t dump_us = fm_usec_since(&t);
	last_save = t;
	last_save_us = dump_us;
	durable_end = watch.last_end;
	durable_ended = watch.ended_in_last;
	durable_completing = watch.completing;
	if (rc != SLURM_SUCCESS)
		error("fairmatch: saving job state before launch failed: %s",
		      slurm_strerror(rc));
	if (!fm_deferred_count())
		return dump_us;
	fm_fault_crash_before_launch(fm_deferred_count());
	schedule_node_save();
	fm_lock(h);
	fm_hold_phase(h, FM_PHASE_LAUNCHES);
	size_t launched = fm_launch_deferred(h);
	fm_unlock(h);
	debug2("fairmatch: %zu batch scripts launched", launched);
	return dump_us;
}

/* Rounds of "which jobs to check" before the rest is checked at once: one
 * or two in practice (a second when checks rule out jobs in the window). */
#define FM_CHECK_ROUNDS 8

/* Applies Slurm's rules to the pending jobs the plan may weigh, as Rust
 * asks for them (src/slurm/window.rs). Rust is asked outside the locks.
 * Called and returns with the locks held; false if the cycle must stop. */
static bool _check_window(fm_snapshot_t *snap, fm_hold_t *h)
{
	size_t *idx = xcalloc(snap->n_pending + 1, sizeof(size_t));
	bool ok = true, last = false;
	for (int round = 1; ok && !last; round++) {
		fm_unlock(h);
		int64_t k = fairmatch_rs_to_check(snap, idx, snap->n_pending);
		fm_lock(h);
		if (!(ok = fm_hold_unchanged(h)) || k == 0)
			break;
		if (k < 0 || round == FM_CHECK_ROUNDS) {
			/* Rust failed, or the window keeps moving: check all. */
			last = true;
			k = 0;
			for (size_t i = 0; i < snap->n_pending; i++)
				if (snap->pending[i].checked == FM_CHECK_NOT)
					idx[k++] = i;
		}
		fm_hold_phase(h, FM_PHASE_CHECKS);
		size_t next = 0;
		while (!fm_check_pending(snap, idx, k, &next, h))
			if (!(ok = fm_hold_yield(h)))
				break;
	}
	xfree(idx);
	return ok;
}

static time_t _monotonic_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Copies the snapshot under the locks, yielding them whenever a hold is
 * spent. Returns false (nothing to free) if the cycle must stop. Sets
 * `*full` (no pending job copied) when every CPU is held:
 * most cycles of a busy cluster, where the pending jobs' copy and checks
 * were all of the cycle's time under the locks and no plan can start a
 * job (fm_watch_t.cpu_free). */
static bool _take_snapshot(fm_snapshot_t *snap, fm_reservation_t *resv,
			   fm_hold_t *h, bool *full)
{
	time_t scanned_to = last_finished_scan;
	if (!fm_scheduling_allowed())
		return false;
	fm_walk_t walk = { .unmodelled = list_create(NULL) };
	fm_hold_phase(h, FM_PHASE_WALK);
	fm_snapshot_begin(snap, &last_finished_scan, &watch, &walk);
	fm_hold_phase(h, FM_PHASE_UNMODELLED);
	size_t started = fm_unmanaged_start(walk.unmodelled, resv);
	fm_hold_phase(h, FM_PHASE_WALK);
	fm_snapshot_nodes(snap, resv, &watch, &walk, started > 0);
	*full = !watch.cpu_free && last_plan &&
		_monotonic_seconds() - last_plan < PLAN_AT_LEAST_EVERY;
	bool ok = true;
	if (!*full) {
		fm_hold_phase(h, FM_PHASE_PENDING);
		size_t next = 0;
		uint32_t holds = h->holds;
		while (!fm_snapshot_pending(snap, &walk, &next,
					    h->holds != holds, h))
			if (!(ok = fm_hold_yield(h)))
				break;
		if (ok)
			ok = _check_window(snap, h);
		if (!ok) {
			/* The jobs that finished meanwhile are scanned again
			 * next cycle, or their run times would be lost. */
			last_finished_scan = scanned_to;
			fm_free_snapshot(snap);
		}
	}
	fm_walk_free(&walk);
	return ok;
}

/* The hold's time per phase, for the cycle's debug line. */
static void _phases_text(const fm_hold_t *h, char *buf, size_t size)
{
	snprintf(buf, size,
		 "by phase: walk %u, unmodelled %u, pending %u, checks %u, starts %u, launches %u us",
		 h->phase_us[FM_PHASE_WALK], h->phase_us[FM_PHASE_UNMODELLED],
		 h->phase_us[FM_PHASE_PENDING], h->phase_us[FM_PHASE_CHECKS],
		 h->phase_us[FM_PHASE_STARTS], h->phase_us[FM_PHASE_LAUNCHES]);
}

/* Returns false when the cycle stopped short (snapshot abandoned, or
 * decisions left unapplied): the agent then runs the next one at its next
 * tick, without waiting for a change it has already seen. */
static bool _cycle(void)
{
	fm_snapshot_t snap;
	fm_reservation_t resv = { 0 };
	fm_hold_t hold = { 0 };
	struct timeval cycle_start;

	/* As backfill: no lock taken, and no retry, while scheduling is
	 * off; the cycle after it is turned back on will look. */
	if (!fm_scheduling_allowed())
		return true;
	gettimeofday(&cycle_start, NULL);
	bool full = false;
	fm_lock(&hold);
	bool ok = _take_snapshot(&snap, &resv, &hold, &full);
	fm_unlock(&hold);
	if (!ok) {
		watch.next_begin = 0;
		fm_free_reservation(&resv);
		/* The pass over unmodelled jobs may have allocated batch jobs:
		 * they are saved and launched whatever stopped the cycle. */
		_make_durable(&hold);
		debug("fairmatch: cycle stopped during the snapshot (scheduling disabled, or partitions, reservations or slurm.conf changed); again at the next tick");
		return false;
	}
	uint32_t snapshot_us = hold.total_us;
	if (full) {
		/* Learned now, not at the next plan: MinJobAge (2 s at least)
		 * may purge a finished record before that. */
		if (snap.n_finished)
			fairmatch_rs_learn(&snap);
		fm_free_snapshot(&snap);
		fm_free_reservation(&resv);
		uint32_t save_us = _make_durable(&hold);
		char phases[200];
		_phases_text(&hold, phases, sizeof(phases));
		debug("fairmatch: cycle %u us (%u us under slurmctld's locks in %u holds, longest %u us, longest on a CPU %u us; snapshot %u us, no plan: every CPU held, state save %u us; first hold on a CPU %u us, later holds at most %u us; %s)",
		      fm_usec_since(&cycle_start), hold.total_us, hold.holds,
		      hold.longest_us, hold.longest_cpu_us, snapshot_us,
		      save_us, hold.first_cpu_us, hold.later_cpu_us, phases);
		return true;
	}
	last_plan = _monotonic_seconds();

	/* Rust decides only the runnable jobs: a wait and a start per task at
	 * most each, and a preemption per running job at most. (Sized by the
	 * whole queue, the two arrays were 11 MB zeroed per cycle at 4,500
	 * pending jobs.) */
	size_t cap = snap.n_running, checked = 0;
	for (size_t i = 0; i < snap.n_pending; i++) {
		if (snap.pending[i].checked == FM_CHECK_RUNNABLE)
			cap += 1 + snap.pending[i].tasks;
		if (snap.pending[i].checked != FM_CHECK_NOT)
			checked++;
	}
	fm_decision_t *decisions = xcalloc(cap + 1, sizeof(fm_decision_t));
	fm_outcome_t *outcomes = xcalloc(cap + 1, sizeof(fm_outcome_t));
	uint32_t queue_len = snap.n_pending;
	struct timeval plan_start;
	gettimeofday(&plan_start, NULL);
	int64_t count = fairmatch_rs_plan(&snap, decisions, cap);
	uint32_t plan_us = fm_usec_since(&plan_start);
	fm_free_snapshot(&snap);

	size_t n_outcomes = 0;
	fm_lock(&hold);
	fm_hold_phase(&hold, FM_PHASE_STARTS);
	/* While the plan ran, partitions, reservations or slurm.conf may have
	 * changed (node indices, the reserved nodes): plan again instead. */
	bool applied = fm_hold_unchanged(&hold);
	if (applied) {
		if (count >= 0)
			n_outcomes = fm_apply(decisions, count, &resv, outcomes,
					      &hold);
		else
			fm_fallback();
		applied = !hold.stopped;
	}
	if (!applied)
		debug("fairmatch: decisions left unapplied (scheduling disabled, or partitions, reservations or slurm.conf changed); planning again at the next tick");
	uint32_t cycle_us = fm_usec_since(&cycle_start);
	/* Still under the job write lock, as Slurm updates these. */
	_record_stats(hold.total_us + fm_usec_since(&hold.since), cycle_us,
		      queue_len, n_outcomes);
	fm_unlock(&hold);
	fm_free_reservation(&resv);
	uint32_t save_us = _make_durable(&hold);

	if (n_outcomes)
		fairmatch_rs_observe(outcomes, n_outcomes);
	char phases[200];
	_phases_text(&hold, phases, sizeof(phases));
	debug("fairmatch: cycle %u us (%u us under slurmctld's locks in %u holds, longest %u us, longest on a CPU %u us; snapshot %u us, plan %u us, state save %u us; first hold on a CPU %u us, later holds at most %u us), %u queued (%zu checked), %lld decisions, %zu starts tried; %s",
	      cycle_us, hold.total_us, hold.holds, hold.longest_us,
	      hold.longest_cpu_us, snapshot_us, plan_us, save_us,
	      hold.first_cpu_us, hold.later_cpu_us, queue_len, checked,
	      (long long) MAX(count, 0), n_outcomes, phases);
	xfree(decisions);
	xfree(outcomes);
	return applied;
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

/*
 * What the agent polls for between ticks, so it plans when Slurm's own
 * scheduler would run (_slurm_rpc_epilog_complete, job submission) and not
 * up to a tick later: with one-second jobs, half a tick is a third of a
 * job's turnaround. A job leaves a node when its epilog is done, which is
 * when Slurm frees its slot: the jobs running or completing on the nodes,
 * summed, then fall. Submissions are sdiag's counter.
 */
typedef struct {
	uint32_t on_nodes;	/* at the last poll */
	uint32_t after_cycle;	/* just after the last cycle */
	uint32_t submitted;
	bool pending;		/* an event no cycle has planned for yet */
	struct timeval first;	/* when the oldest such event was seen */
} fm_events_t;

/* Only the node read lock, for a few microseconds on a small cluster. */
static void _events_count(uint32_t *on_nodes, uint32_t *submitted)
{
	slurmctld_lock_t node_read = { .node = READ_LOCK };
	node_record_t *node_ptr;
	uint32_t n = 0;
	lock_slurmctld(node_read);
	for (int i = 0; (node_ptr = next_node(&i)); i++)
		n += node_ptr->run_job_cnt + node_ptr->comp_job_cnt;
	unlock_slurmctld(node_read);
	*on_nodes = n;
	/* Slurm bumps it under the job write lock, which we do not take
	 * here: a stale value only delays the wake to the next poll. */
	*submitted = __atomic_load_n(&slurmctld_diag_stats.jobs_submitted,
				     __ATOMIC_RELAXED);
}

/*
 * Each cycle that starts jobs first writes every job record
 * (_make_durable: 15 to 25 ms at 10,000 records), so under heavy churn the
 * cycles that start a job or two cost far more than the starts. Cycles
 * come at most once per this gap after a write, unless half the jobs on
 * the nodes have left: the writes then take at most about 1/32 of the
 * time. A small cluster's writes take a millisecond, so its gap is short.
 */
#define SAVE_GAP_FACTOR 32
#define SAVE_GAP_MAX_MS 1000

static uint32_t _save_gap_left_ms(void)
{
	uint64_t gap_us = MIN((uint64_t) last_save_us * SAVE_GAP_FACTOR,
			      SAVE_GAP_MAX_MS * 1000ULL);
	uint64_t since_us = fm_usec_since(&last_save);
	return since_us >= gap_us ? 0 : (gap_us - since_us + 999) / 1000;
}

/*
 * Whether to plan now for what the polls saw: once a poll sees nothing new
 * (the endings of a wave are over: one cycle starts them all), or half a
 * tick after the first event if they keep coming; and once the save gap
 * has passed, or half the jobs on the nodes are gone since the last cycle.
 * (Planning at the first freed slot, a steady stream of one-second jobs
 * cost 2.6 times the CPU of planning on the tick; a quarter instead of
 * half let a stream through at 2.3 times backfill's CPU.)
 */
static bool _events_due(fm_events_t *e)
{
	uint32_t on_nodes, submitted;
	_events_count(&on_nodes, &submitted);
	bool seen = on_nodes < e->on_nodes || submitted != e->submitted;
	e->on_nodes = on_nodes;
	e->submitted = submitted;
	if (seen && !e->pending) {
		e->pending = true;
		gettimeofday(&e->first, NULL);
	}
	if (!e->pending ||
	    (seen && fm_usec_since(&e->first) < settings.interval_ms * 500U))
		return false;
	uint32_t gone = e->after_cycle > on_nodes ? e->after_cycle - on_nodes :
						    0;
	return gone * 2 >= e->after_cycle || !_save_gap_left_ms();
}

/* After a cycle: its own starts are not events, and it planned for the
 * events seen before it. A job that left between the cycle's last hold
 * and this count waits for the next tick. */
static void _events_reset(fm_events_t *e)
{
	e->pending = false;
	_events_count(&e->on_nodes, &e->submitted);
	e->after_cycle = e->on_nodes;
}

/* Until the next tick (which waits for the save gap while the polls are
 * on), or the next poll if sooner. */
static uint32_t _next_sleep_ms(const struct timeval *last_tick)
{
	uint32_t since = fm_usec_since(last_tick) / 1000;
	uint32_t left = since < settings.interval_ms ?
				settings.interval_ms - since : 0;
	if (!settings.event_poll_ms)
		return MAX(left, 1);
	left = MAX(left, _save_gap_left_ms());
	return MAX(MIN(settings.event_poll_ms, left), 1);
}

static void *_agent(void *arg)
{
	time_t seen_job = 0, seen_node = 0, seen_part = 0, last_cycle = 0;
	bool reloaded = false, unfinished = false, accounting_read = false;
	struct timeval last_tick;
	fm_events_t events = { 0 };
	gettimeofday(&last_tick, NULL);
	/* Before this agent starts anything. */
	fm_lost_launch_note();
	while (_sleep_ms(_next_sleep_ms(&last_tick))) {
		slurm_mutex_lock(&term_lock);
		bool reload = reload_config;
		reload_config = false;
		slurm_mutex_unlock(&term_lock);
		if (reload) {
			_load_config();
			reloaded = true;
			/* Once, after the first load restored (or not) what
			 * was learned. */
			if (!accounting_read) {
				fm_learn_from_accounting();
				accounting_read = true;
			}
		}
		bool event = settings.event_poll_ms && _events_due(&events);
		/* With the polls on, the tick waits for the save gap too, or
		 * it would start the few jobs the gap holds back. */
		if (!reloaded && !event &&
		    (fm_usec_since(&last_tick) < settings.interval_ms * 1000U ||
		     (settings.event_poll_ms && _save_gap_left_ms())))
			continue;
		gettimeofday(&last_tick, NULL);
		time_t now = time(NULL);
		fm_lost_launch_check(now);
		/* The update stamps have one-second resolution: while the
		 * last change is this second or the one before, a newer
		 * change may hide behind an equal stamp, so look anyway. */
		bool recent = difftime(now, last_job_update) <= 1 ||
			      difftime(now, last_node_update) <= 1;
		if (!event && !reloaded && !unfinished && !recent &&
		    seen_job == last_job_update &&
		    seen_node == last_node_update &&
		    seen_part == last_part_update &&
		    (!watch.next_begin || now < watch.next_begin) &&
		    difftime(now, last_cycle) < MAX_IDLE_SECONDS)
			continue;
		reloaded = false;
		unfinished = !_cycle();
		/* Our own writes bumped these; do not wake for them. */
		seen_job = last_job_update;
		seen_node = last_node_update;
		seen_part = last_part_update;
		last_cycle = now;
		if (settings.event_poll_ms)
			_events_reset(&events);
	}
	return NULL;
}

int32_t fairmatch_shim_init(void)
{
	verbose("fairmatch: built for Slurm %s", fm_built_for());
	/* Only before the first load (a loaded interval is never 0): a
	 * second init keeps what the last one read, as the agent does when a
	 * reload fails. */
	if (!settings.interval_ms)
		settings = fairmatch_rs_defaults;
	_ensure_sched_params();
	slurm_mutex_lock(&term_lock);
	stop_agent = false;
	reload_config = true;
	slurm_mutex_unlock(&term_lock);
	fm_thread_create(&agent_thread, _agent, NULL);
	return SLURM_SUCCESS;
}

void fairmatch_shim_fini(void)
{
	slurm_mutex_lock(&term_lock);
	stop_agent = true;
	slurm_cond_signal(&term_cond);
	slurm_mutex_unlock(&term_lock);
	if (agent_thread)
		fm_thread_join(agent_thread);
	fm_snapshot_release();
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
