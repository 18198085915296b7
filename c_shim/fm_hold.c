/*
 * The agent's holds of slurmctld's cycle locks (fm_lock() to fm_unlock(),
 * at most LockHoldMs each, then a yield) and their timing by phase, with
 * the helpers the copy and the starts use under them: the clock, and
 * which partitions are managed. sched_fairmatch.c, fm_snapshot.c and
 * fm_start.c call in here; this file calls none of them, and learns
 * LockHoldMs and Partitions= from sched_fairmatch.c at each load of
 * fairmatch.conf (fm_hold_configure()).
 */

#include "fm_slurm.h"

/* Copies of the agent's settings, from fm_hold_configure(). */
static uint32_t hold_ms;
/* Managed partitions, comma-separated; "" = all. */
static char managed[sizeof(((fm_settings_t *) 0)->partitions)];

/* Copy and apply both need job and node write locks (select_nodes()). */
static const slurmctld_lock_t cycle_locks = {
	.conf = READ_LOCK, .job = WRITE_LOCK, .node = WRITE_LOCK,
	.part = READ_LOCK, .fed = READ_LOCK,
};

void fm_hold_configure(const fm_settings_t *settings)
{
	hold_ms = settings->hold_ms;
	memcpy(managed, settings->partitions, sizeof(managed));
}

double fm_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Whether the priority plugin keeps decayed association usage: only
 * priority/multifactor does. Set with slurmctld's configuration read. */
static bool usage_kept = false;

void fm_set_usage_kept(bool kept)
{
	usage_kept = kept;
}

bool fm_usage_kept(void)
{
	return usage_kept;
}

bool fm_manages_every_partition(void)
{
	return !managed[0];
}

bool fm_manages(const char *partition)
{
	if (!managed[0])
		return true;
	if (!partition)
		return false;
	size_t n = strlen(partition);
	for (const char *p = managed; *p;) {
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

bool fm_scheduling_allowed(void)
{
	return !slurmctld_config.shutdown_time &&
	       !slurmctld_config.scheduling_disabled;
}

uint32_t fm_usec_since(const struct timeval *start)
{
	struct timeval end;
	gettimeofday(&end, NULL);
	long long us = (end.tv_sec - start->tv_sec) * 1000000LL +
		       (end.tv_usec - start->tv_usec);
	return us < 0 ? 0 : (uint32_t) MIN(us, (long long) UINT32_MAX);
}

static uint64_t _thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t) t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* The calling thread's time waiting for a CPU, from the kernel's
 * schedstat (0 where it is not available). On a busy node, a hold's wall
 * time is often mostly this wait. */
static uint64_t _thread_wait_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return wait;
}

static const char *phase_names[FM_PHASES] = {
	[FM_PHASE_WALK] = "walk over the job list",
	[FM_PHASE_UNMODELLED] = "jobs fairmatch does not model",
	[FM_PHASE_PENDING] = "snapshot of pending jobs",
	[FM_PHASE_CHECKS] = "checks of pending jobs",
	[FM_PHASE_STARTS] = "applying decisions",
	[FM_PHASE_LAUNCHES] = "launching batch scripts",
};

/* Long enough for a thread woken by our unlock to take the locks before
 * we take them back. */
#define YIELD_SLEEP_US 1000

void fm_lock(fm_hold_t *h)
{
	lock_slurmctld(cycle_locks);
	gettimeofday(&h->since, NULL);
	h->phase_since = h->since;
	h->since_cpu_ns = _thread_cpu_ns();
	h->since_wait_ns = _thread_wait_ns();
	h->held = true;
	h->worked = false;
	h->holds++;
}

void fm_unlock(fm_hold_t *h)
{
	uint32_t us = fm_usec_since(&h->since);
	uint32_t cpu_us = (_thread_cpu_ns() - h->since_cpu_ns) / 1000;
	uint64_t wait_ns = _thread_wait_ns();
	h->phase_us[h->phase] += fm_usec_since(&h->phase_since);
	h->held = false;
	h->total_us += us;
	h->longest_us = MAX(h->longest_us, us);
	h->longest_cpu_us = MAX(h->longest_cpu_us, cpu_us);
	if (h->holds == 1)
		h->first_cpu_us = cpu_us;
	else
		h->later_cpu_us = MAX(h->later_cpu_us, cpu_us);
	h->part = last_part_update;
	h->resv = last_resv_update;
	h->conf = slurm_conf.last_update;
	unlock_slurmctld(cycle_locks);
	if (us > 2000U * hold_ms)
		debug("fairmatch: held slurmctld's locks for %u us (%u us on a CPU, %"PRIu64" us waiting for one; %s), over twice LockHoldMs",
		      us, cpu_us, (wait_ns - h->since_wait_ns) / 1000,
		      phase_names[h->phase]);
}

void fm_hold_phase(fm_hold_t *h, fm_phase_t phase)
{
	if (h->held)
		h->phase_us[h->phase] += fm_usec_since(&h->phase_since);
	h->phase = phase;
	gettimeofday(&h->phase_since, NULL);
}

bool fm_hold_spent(const fm_hold_t *h)
{
	return h->worked && fm_usec_since(&h->since) >= hold_ms * 1000U;
}

bool fm_hold_unchanged(const fm_hold_t *h)
{
	return fm_scheduling_allowed() && h->part == last_part_update &&
	       h->resv == last_resv_update &&
	       h->conf == slurm_conf.last_update;
}

bool fm_hold_yield(fm_hold_t *h)
{
	return fm_hold_yield_us(h, YIELD_SLEEP_US);
}

bool fm_hold_yield_us(fm_hold_t *h, uint32_t sleep_us)
{
	fm_unlock(h);
	usleep(sleep_us);
	fm_lock(h);
	if (!fm_hold_unchanged(h))
		h->stopped = true;
	return !h->stopped;
}
